"""Model backends. Import a concrete backend through :mod:`.registry` so heavy deps load lazily."""
