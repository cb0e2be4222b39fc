"""The three agents: prompt rendering, output models and their decoding schemas."""
