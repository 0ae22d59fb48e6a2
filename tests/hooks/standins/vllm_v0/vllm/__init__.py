"""Stand-in for the vllm package, V0 engine layout (truffld tests)."""
