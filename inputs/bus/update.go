package bus

// Entry is one key of a bucket with its value and the revision it was
// written at.
type Entry struct {
	Key      string
	Value    []byte
	Revision uint64
}

// Update is what a Watch delivers: a whole snapshot, one live change, or
// news that the bucket is not there.
type Update struct {
	Bucket, Filter string
	// Snapshot: Entries is the whole state under Filter (sorted by key); a
	// key not in it is gone.
	Snapshot bool
	// Entries holds the snapshot's keys, or exactly one for a live change.
	Entries []Entry
	// Deleted: a live delete or purge of Entries[0].Key (Value empty).
	Deleted bool
	// Missing: the bucket does not exist (yet); Entries is empty. What was
	// known of it is gone.
	Missing bool
	// NotPermitted: the bus refuses this connection the bucket (a
	// permission violation); Entries is empty. What was known of it is
	// gone.
	NotPermitted bool
	// Gone: with a Snapshot, Missing or NotPermitted, the keys an earlier update of this
	// Watch said exist that do not any more (sorted), so that a reader need
	// not keep every key to tell.
	Gone []string
}
