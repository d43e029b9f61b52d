"""The tiered log: log segments uploaded to remote storage, their manifest, and the task that keeps them."""
