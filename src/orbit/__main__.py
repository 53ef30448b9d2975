from orbit.cli import main

main()
