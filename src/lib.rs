//! spinmutex
