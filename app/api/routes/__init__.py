"""Route modules; handlers stay a few lines, logic lives in app/jobs, app/kb and app/auth."""
