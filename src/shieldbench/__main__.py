from shieldbench.cli import main

main()
