"""Bytes in: decompression on threads, coalesced chunk reads, remote stores, pipes."""
