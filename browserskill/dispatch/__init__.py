"""The dispatcher, the journal, outcomes, a person in the loop: where every call is run,
ended and recorded (the sessions it runs in are in `session/`)."""
