//! Text extraction and chunking of uploaded documents (adapter; being written for issue 7).
