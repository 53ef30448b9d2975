"""Call recordings: WAV files (8 kHz, mono, 16-bit PCM) and their on-disk store."""
