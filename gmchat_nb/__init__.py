"""gmchat_nb."""
