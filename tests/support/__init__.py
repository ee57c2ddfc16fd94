"""What the tests and benchmarks share: protocol servers, fault server, scripted APIs, samplers."""
