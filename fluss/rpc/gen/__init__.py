"""Generated gRPC stubs; run `make proto` to regenerate."""
