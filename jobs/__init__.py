"""Many ranks: the job's inputs, a summary per rank made in worker processes, the Job itself."""
