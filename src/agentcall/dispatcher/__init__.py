"""The Dispatcher (D): control plane between the SaaS and the telephony cell.

Start-up note: ``jsonschema[format-nongpl]`` pulls in ``rfc3987_syntax``, which compiles
a grammar at import time (seconds on a loaded 2-core machine) only to check the ``iri``
format. No dispatcher contract uses that format (only ``date`` and ``date-time``), so
the module is kept out; jsonschema then simply omits the ``iri`` checker.
"""

import sys

sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
