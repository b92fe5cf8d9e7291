"""WebMCP: the tools pages expose (`document.modelContext`), listed and invoked honestly.

`tools` keeps each tab's tool table from its CDP sessions' events and `invocation` is the
event-order state machine of one call; both are I/O-free, so recorded Chromium event
orders can drive them directly. The asyncio glue that sends the commands acts in a
session, so it is a tool: `tools/webmcp_client.py`.
"""
