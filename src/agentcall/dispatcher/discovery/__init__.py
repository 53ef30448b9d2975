"""Task discovery: the paging loop, its transaction and the start-up admission gate."""
