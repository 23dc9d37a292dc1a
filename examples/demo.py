"""The demo `make demo` runs. Replaced by the real pipeline demo."""
print("lineprofiler demo: nothing to profile yet")
