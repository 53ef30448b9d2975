"""Where Orbit's server is assembled: `server.create_app` builds settings → store → engine →
use cases → app, for `orbit serve`, the uvicorn factory, the tests and the benchmarks."""
