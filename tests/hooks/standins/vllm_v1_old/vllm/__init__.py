"""Stand-in for the vllm package (truffld tests): only the attributes the hooks read."""
