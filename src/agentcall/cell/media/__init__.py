"""Media of real calls: G.711 A-law, RTP, jitter buffer, statistics and the recording mix."""
