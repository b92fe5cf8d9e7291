"""Sessions, their queues, operations and the journal: where every call is ordered and recorded."""
