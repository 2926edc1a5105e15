"""A turn that defends itself: what guards a turn besides the provider's retries.

Pure, deterministic pieces the loop consults (no I/O, no model): data kept as data
(``invisible.py``, ``envelope.py``, ``scorer.py``, ``intent.py``), the loop guard and budgets
(``loop_guard.py``) and the completion gates (``gates.py``).
"""
