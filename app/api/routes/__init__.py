"""Route modules; handlers stay a few lines, logic lives in app/services."""
