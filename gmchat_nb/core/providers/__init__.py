"""Providers: the protocol, the registry of provider specs, and the offline providers."""
