"""The viewer on a distributed job, and on two jobs compared."""
