package garbagecollector

import "k8s.io/utils/lru"

// absentOwners remembers owners known not to exist, so that the many
// dependents of a deleted owner need not each GET it to learn that. Uids
// are never reused, so an entry never goes stale; the cache is bounded and
// forgets the least recently used entries first.
type absentOwners struct {
	cache *lru.Cache
}

func newAbsentOwners(size int) *absentOwners {
	return &absentOwners{cache: lru.New(size)}
}

func (a *absentOwners) add(id objectRef) { a.cache.Add(id, nil) }

func (a *absentOwners) has(id objectRef) bool {
	_, ok := a.cache.Get(id)
	return ok
}
