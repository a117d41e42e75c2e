"""One profile: opened (prefetched, loaded in the background, from the cache), and its views."""
