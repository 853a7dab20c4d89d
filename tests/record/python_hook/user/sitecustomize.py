print("the program's own sitecustomize ran")
