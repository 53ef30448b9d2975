"""Root of the Dispatcher exception tree.

Every error the dispatcher package raises on purpose derives from
:class:`DispatcherError`, so callers can catch the whole family at one edge::

    DispatcherError
    ├── ContractError            (agentcall.dispatcher.contracts) a body breaks its schema
    ├── ContractSetupError       (agentcall.dispatcher.contracts) schema files missing/broken,
    │                             or an unknown contract kind was asked for
    ├── SettingsError            (agentcall.dispatcher.settings) a setting is missing or invalid
    ├── StoreError               (agentcall.dispatcher.store.db) the state database cannot be used
    ├── UnknownExecution         (agentcall.dispatcher.store.executions) caller bug
    ├── IllegalTransition        (agentcall.dispatcher.domain.states) a forbidden state move
    ├── DiscoveryFailed          (agentcall.dispatcher.discovery.service) a round failed;
    │                             admission closed
    ├── SaasError                (agentcall.dispatcher.saas.client) a SaaS GET failed
    │   ├── SaasUnavailable      network, timeout, 5xx: retry, fail closed meanwhile
    │   ├── SaasRefused          401/403/404/400 with the contract's error code
    │   └── SaasInvalid          a 200 body breaking its schema or an identity check
    ├── CellPortError            (agentcall.dispatcher.cell.port) a cell request failed
    │   ├── CellRejected         refused: nothing was dialled
    │   └── CellUnavailable      no answer: whether it dialled is unknown
    │       └── CallIdTaken      the call_id was dialled before or belongs to another plan
    └── RecordingError           (agentcall.dispatcher.recording.storage)

Other modules add their own subclasses here or next to their code; each class
says in its docstring how to fix the situation it reports.
"""

from __future__ import annotations


class DispatcherError(Exception):
    """Base class of every deliberate Dispatcher error; catch it at process edges."""
