package etcd

import (
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
)

// minFreeDiskUsage is the help of --min-free-disk, for `gcp etcd` and
// `gcp start` alike (AddFlags).
const minFreeDiskUsage = "Free space to keep on the file system of etcd's data dir, in bytes or as a quantity (512Mi, 2Gi): " +
	"below it the member raises etcd's NOSPACE alarm, so writes get 507 while reads and deletes go on, " +
	"instead of etcd stopping on a full disk; once a quarter more is free it disarms that alarm by itself. 0 turns this off. See docs/operations.md."

// bytesVar defines a flag of a byte count that takes a plain number or a
// quantity with a binary or decimal suffix (512Mi, 1G), stored in p.
func bytesVar(fs *pflag.FlagSet, p *int64, name, usage string) {
	fs.Var((*bytesValue)(p), name, usage)
}

// bytesValue is a byte count flag.
type bytesValue int64

func (b *bytesValue) String() string {
	if *b == 0 {
		return "0"
	}
	return resource.NewQuantity(int64(*b), resource.BinarySI).String()
}

func (b *bytesValue) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return fmt.Errorf("want bytes or a quantity such as 512Mi or 2Gi")
	}
	n := q.Value()
	if q.Sign() < 0 || resource.NewQuantity(n, resource.BinarySI).Cmp(q) != 0 {
		return fmt.Errorf("want a whole, non-negative number of bytes")
	}
	*b = bytesValue(n)
	return nil
}

func (b *bytesValue) Type() string { return "quantity" }
