"""16-bit PCM audio below every other part of the cell: synthetic speech for the simulated
mode and the mock TTS (``synth``), sample-rate conversion for the providers and the line
(``resample``), voice activity (``vad``), DTMF and beep tones (``tones``) and
answering-machine detection (``amd``)."""
