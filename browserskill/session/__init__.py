"""Sessions: each with its queue of operations, each operation's cancel scope,
and the session store (what a session keeps across restarts).

Below the tools that act in a session and the dispatcher that runs its
operations; above the browser (docs/design.md, "Layers").
"""
