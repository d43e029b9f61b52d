"""The Fluss lake tiering job (PyFlink): tiers lake-enabled tables into Paimon. See ``tiering_job.job``."""
