"""Root of the Dispatcher exception tree.

Every error the dispatcher package raises on purpose derives from
:class:`DispatcherError`, so callers can catch the whole family at one edge::

    DispatcherError
    ├── ContractError            (dispatcher.contracts) a body breaks its schema
    └── ContractSetupError       (dispatcher.contracts) schema files missing/broken,
                                  or an unknown contract kind was asked for

Other modules add their own subclasses here or next to their code; each class
says in its docstring how to fix the situation it reports.
"""

from __future__ import annotations


class DispatcherError(Exception):
    """Base class of every deliberate Dispatcher error; catch it at process edges."""
