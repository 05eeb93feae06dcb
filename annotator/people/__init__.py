"""Services, who may work: accounts, sessions, authorization, training."""
