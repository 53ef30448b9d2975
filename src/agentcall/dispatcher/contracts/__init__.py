"""The SaaS <-> Dispatcher message contracts: strict decoding and JSON Schema validation.

:mod:`.schemas` loads and compiles the schema files and validates bodies; :mod:`.fast`
compiles flat schemas into a quick yes/no check used as a shortcut to accept. This
package re-exports the public names of :mod:`.schemas` (its modules never import it back).
"""

from agentcall.dispatcher.contracts.schemas import (
    ENV_DIR,
    MAX_BODY_BYTES,
    UINT64_MAX,
    ContractError,
    ContractSetupError,
    Kind,
    command_kind,
    contracts_dir,
    control_reject_reasons,
    decode,
    execute_reject_reasons,
    kinds,
    schema,
    validate,
)

__all__ = [
    "ENV_DIR",
    "MAX_BODY_BYTES",
    "UINT64_MAX",
    "ContractError",
    "ContractSetupError",
    "Kind",
    "command_kind",
    "contracts_dir",
    "control_reject_reasons",
    "decode",
    "execute_reject_reasons",
    "kinds",
    "schema",
    "validate",
]
