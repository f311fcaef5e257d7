package etcd

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	gcpetcd "github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// newSnapshotCommand returns `gcp etcd snapshot save|status|restore`.
func newSnapshotCommand(ctx context.Context, name string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save a snapshot of a member, inspect a snapshot file, or restore one into a new data dir",
		Args:  cobra.NoArgs,
	}

	o := &clientOptions{name: name}
	save := &cobra.Command{
		Use:   "save FILE",
		Short: "Stream a snapshot of one member (--etcd-servers with one URL) into FILE, mode 0600; FILE must not exist",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := o.config()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, o.timeout)
			defer cancel()
			if err := gcpetcd.SaveSnapshot(ctx, cfg, args[0]); err != nil {
				return err
			}
			st, err := gcpetcd.InspectSnapshot(args[0])
			if err != nil {
				return err
			}
			return printSnapshot(cmd.OutOrStdout(), "Saved "+args[0], st)
		},
	}
	o.addFlags(save.Flags())

	status := &cobra.Command{
		Use:   "status FILE",
		Short: "Check a snapshot file's integrity and show its revision, keys, size and etcd storage version",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := gcpetcd.InspectSnapshot(args[0])
			if err != nil {
				return err
			}
			return printSnapshot(cmd.OutOrStdout(), args[0], st)
		},
	}

	r := gcpetcd.RestoreConfig{}
	restore := &cobra.Command{
		Use:   "restore FILE --data-dir DIR --name NAME --initial-cluster NAME=PEER_URL,... --initial-advertise-peer-urls URL",
		Short: "Make a new member's data dir from a snapshot: every key kept, the old members and peer URLs forgotten",
		Long: "Make a new member's data dir from a snapshot, as `etcdutl snapshot restore` does. Restore the same snapshot once " +
			"per member of the new cluster, each with its own --name, --data-dir and --initial-advertise-peer-urls and the same " +
			"--initial-cluster, then start each `" + name + " etcd` with those flags. The snapshot is checked first; a truncated or corrupt " +
			"one, or a data dir that is not empty, fails and leaves nothing behind.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r.Snapshot = args[0]
			if r.DataDir == "" {
				return fmt.Errorf("--data-dir is required: the new member's data dir")
			}
			if err := gcpetcd.RestoreSnapshot(r); err != nil {
				return err
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "Restored %s into %s as member %s of %s\n", args[0], r.DataDir, r.Name, r.InitialCluster)
			return err
		},
	}
	fs := restore.Flags()
	fs.StringVar(&r.DataDir, "data-dir", "", "The new member's data dir; it must not exist or be empty.")
	fs.StringVar(&r.Name, "name", gcpetcd.DefaultName, "The new member's name, as its "+name+" etcd --name.")
	fs.StringVar(&r.InitialCluster, "initial-cluster", "", "The new cluster, NAME=PEER_URL,...; empty means this member alone.")
	fs.StringSliceVar(&r.PeerURLs, "initial-advertise-peer-urls", nil, "This member's peer URLs in --initial-cluster.")
	fs.Uint64Var(&r.RevisionBump, "bump-revision", gcpetcd.DefaultRevisionBump,
		"Raise the restored revision by this much and mark older revisions compacted, so watchers relist; 0 keeps the snapshot's revision.")

	cmd.AddCommand(save, status, restore)
	return cmd
}

func printSnapshot(w io.Writer, what string, st gcpetcd.SnapshotStatus) error {
	version := st.Version
	if version == "" {
		version = "unknown"
	}
	_, err := fmt.Fprintf(w, "%s: revision %d, %d keys, %s, hash %08x, etcd storage version %s\n",
		strings.TrimSpace(what), st.Revision, st.TotalKey, gcpetcd.HumanBytes(st.TotalSize), st.Hash, version)
	return err
}
