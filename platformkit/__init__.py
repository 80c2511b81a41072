"""Small toolkits of the machine itself (processes, ports, lock files) that every layer may use. Standard library
only; imports nothing of ours, so cli/, setter/ and warehouse/ import it without a circle."""
