from agentcall.orbit.cli import main

main()
