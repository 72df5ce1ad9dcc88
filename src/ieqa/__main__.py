from ieqa.cli import main

main()
