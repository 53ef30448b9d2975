"""Recordings of accepted calls (D-REC-1, D-REC-2): authorize, verify, close by the deadline.

A call that produced a recording ends (occupancy released, D-CMD-4) with an open
recording row; its single call.result waits until the recording is closed:

* ``domain.recording`` — the persisted state machine and its transitions (pure);
* ``decide``      — what to do next for a recording at ``now``; deadline and expiry (pure);
* ``keys``        — the fixed recording_id / upload_id / object_key of a call (pure);
* ``storage``     — the object-storage port and its S3 adapter (presign, HEAD + SHA-256);
* ``transaction`` — the recording changes, one transaction each (closing stores the
  call.result through :mod:`agentcall.dispatcher.finalize`);
* ``store.recordings`` — the ``recordings`` table (SQLite);
* ``service``     — the loop: authorize + hand the PUT to the cell, verify, sweep
  deadlines, close with the call.result.

Errors (rooted at :class:`agentcall.dispatcher.errors.DispatcherError`)::

    RecordingError
    ├── StorageUnavailable     the object store did not answer: retried on the next sweep
    └── AuthorizationFailed    a presigned PUT cannot be made (settings/credentials):
                               the recording closes ``unavailable`` at once
"""
