// Package snapshot is `gcp snapshot`: snapshots of a `gcp start` data dir's
// etcd, as `k3s etcd-snapshot` keeps them, and restoring one into a new
// data dir.
package snapshot

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gcp-project/gcp/pkg/controlplane/allinone"
	"github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// NewCommand returns `snapshot save|ls|delete|prune|restore` for data dirs
// whose default is defaultDataDir. name is the product's, as main's root
// command is called.
func NewCommand(ctx context.Context, name, defaultDataDir string) *cobra.Command {
	var dataDir, snapshotDir string
	var compressed bool
	dir := func() etcd.SnapshotDir {
		if snapshotDir != "" {
			return etcd.SnapshotDir(snapshotDir)
		}
		return etcd.SnapshotDir(allinone.DefaultSnapshotDir(dataDir))
	}
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save, list, delete, prune and restore snapshots of a " + name + " start data dir",
		Long: "Snapshots of the etcd data of a `" + name + " start` data dir, running or not: while it runs, through the member's " +
			"private socket without downtime. `" + name + " start --snapshot-interval` takes them on a schedule into the same directory. " +
			"A snapshot holds every object, secrets included: keep it as private as the data dir. " +
			"For `" + name + " etcd` clusters use `" + name + " etcd snapshot`.",
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&dataDir, "data-dir", defaultDataDir, "The "+name+" start data dir.")
	cmd.PersistentFlags().StringVar(&snapshotDir, "snapshot-dir", "", "Directory of the snapshots; empty means <data-dir>/snapshots, as "+name+" start's.")

	save := &cobra.Command{
		Use:   "save",
		Short: "Take a snapshot now",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
			defer cancel()
			f, err := allinone.SaveSnapshot(ctx, dataDir, dir(), compressed)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "Saved %s (%s)\n", f.Path, etcd.HumanBytes(f.Size))
			return err
		},
	}
	save.Flags().BoolVar(&compressed, "compress", false, "Gzip the snapshot (.db.gz); restore reads both.")
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the snapshots, oldest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			files, err := dir().List()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tTAKEN\tSIZE")
			for _, f := range files {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", f.Name, f.Taken.Format(time.RFC3339), etcd.HumanBytes(f.Size))
			}
			return tw.Flush()
		},
	}
	del := &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete snapshots by name (as ls shows them)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, names []string) error {
			for _, name := range names {
				if err := dir().Delete(name); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Deleted %s\n", name)
			}
			return nil
		},
	}
	var retain int
	prune := &cobra.Command{
		Use:   "prune",
		Short: "Delete all but the newest --snapshot-retention snapshots",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			removed, err := dir().Prune(retain)
			for _, f := range removed {
				fmt.Fprintf(cmd.OutOrStdout(), "Deleted %s\n", f.Name)
			}
			return err
		},
	}
	prune.Flags().IntVar(&retain, "snapshot-retention", allinone.DefaultSnapshotRetention, "How many of the newest snapshots to keep.")
	var bump uint64
	restore := &cobra.Command{
		Use:   "restore FILE --data-dir NEW_DATA_DIR",
		Short: "Make a new data dir's etcd from a snapshot; then " + name + " start --data-dir NEW_DATA_DIR serves it",
		Long: "Make the etcd data of a new data dir from a snapshot (from `" + name + " snapshot save`, a scheduled snapshot or " +
			"`" + name + " etcd snapshot save`), also on another machine with another address and port: the member forgets where the " +
			"snapshot came from and keeps every object. Copy the old data dir's pki/ into the new one first to keep its CA, " +
			"certificates and service account keys (tokens stay valid); without it " + name + " start makes a new PKI. " +
			"The data dir must have no etcd data; a truncated or corrupt snapshot fails and leaves nothing behind.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			abs, err := filepath.Abs(dataDir)
			if err != nil {
				return err
			}
			if err := allinone.RestoreSnapshot(args[0], abs, bump); err != nil {
				return err
			}
			hasPKI := "with the PKI in it"
			if _, err := os.Stat(filepath.Join(abs, "pki", "ca.crt")); err != nil {
				hasPKI = "with a new PKI (no pki/ was copied in)"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "Restored %s into %s; %s start --data-dir %s serves it %s\n", args[0], abs, name, dataDir, hasPKI)
			return err
		},
	}
	restore.Flags().Uint64Var(&bump, "bump-revision", etcd.DefaultRevisionBump,
		"Raise the restored revision by this much and mark older revisions compacted, so watchers relist; 0 keeps the snapshot's revision.")
	cmd.AddCommand(save, ls, del, prune, restore)
	return cmd
}
