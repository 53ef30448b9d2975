"""The Orbit console at `/ui` (docs/orbit/console.md): server-rendered pages (Jinja2,
autoescaped), a small script that refreshes the live part of a page, assets shipped in this
package. It is an HTTP edge beside `agentcall.orbit.api`: it reads through
`agentcall.orbit.execution.inspection` and the store, and acts through the same use cases and
permission checks as the task API."""
