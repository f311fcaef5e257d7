package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"

	gcpetcd "github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// memberStatusTimeout is how long `gcp etcd status` waits for one member
// (or --command-timeout, if shorter). A member that is down must not hold
// up the rows of the others: the moment one is down is when an operator
// looks for the new leader.
const memberStatusTimeout = 3 * time.Second

// newStatusCommand returns `gcp etcd status`: each member as its client
// URL answers, as `etcdctl endpoint status` shows it, and the alarms.
// Members are asked at once, each with its own deadline; one that does not
// answer is a row saying so, and the command then exits non-zero, as
// etcdctl does, after printing everything it learned.
func newStatusCommand(ctx context.Context, name string) *cobra.Command {
	o := &clientOptions{name: name}
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show each member: versions (server and storage), leader, raft term and index, database size in use and allocated; and the cluster's alarms",
		Long: "Show each member: versions (server and storage), leader, raft term and index, database size in use and allocated; and the cluster's alarms. " +
			"Members are asked at once, each waited for at most 3 s (or --command-timeout, if shorter). A member that does not answer is shown as unreachable " +
			"and the others as they are; the command then exits 1, after printing every row and the alarms as the voting members that answered know them.",
		Args: cobra.NoArgs,
	}
	o.addFlags(cmd.Flags())
	cmd.RunE = o.run(ctx, func(ctx context.Context, c *clientv3.Client, w io.Writer) error {
		timeout := min(memberStatusTimeout, o.timeout)
		statuses := make([]*clientv3.StatusResponse, len(o.servers))
		errs := make([]error, len(o.servers))
		var wg sync.WaitGroup
		for i, ep := range o.servers {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(ctx, timeout)
				defer cancel()
				statuses[i], errs[i] = c.Status(ctx, ep)
			})
		}
		wg.Wait()

		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ENDPOINT\tID\tVERSION\tSTORAGE VERSION\tDB SIZE\tDB IN USE\tLEADER\tLEARNER\tRAFT TERM\tRAFT INDEX\tERRORS")
		var voters, down []string
		for i, ep := range o.servers {
			st, err := statuses[i], errs[i]
			if err != nil {
				if errors.Is(err, context.DeadlineExceeded) {
					err = fmt.Errorf("no answer within %v", timeout)
				}
				down = append(down, ep)
				fmt.Fprintf(tw, "%s\tunreachable\t\t\t\t\t\t\t\t\t%v\n", ep, err)
				continue
			}
			if !st.IsLearner {
				voters = append(voters, ep)
			}
			// A new cluster writes its storage version once its
			// members agree on a cluster version (etcd checks every 4 s).
			storage := st.StorageVersion
			if storage == "" {
				storage = "unknown"
			}
			fmt.Fprintf(tw, "%s\t%x\t%s\t%s\t%s\t%s\t%t\t%t\t%d\t%d\t%v\n", ep, st.Header.MemberId, st.Version, storage,
				gcpetcd.HumanBytes(st.DbSize), gcpetcd.HumanBytes(st.DbSizeInUse), st.Header.MemberId == st.Leader, st.IsLearner,
				st.RaftTerm, st.RaftIndex, st.Errors)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		alarmsErr := errors.New("no voting member answered")
		if len(voters) > 0 {
			// Only voting members that answered are asked, so that the
			// client's balancer cannot pick one that is down, or a
			// learner, which refuses the request.
			c.SetEndpoints(voters...)
			actx, cancel := context.WithTimeout(ctx, timeout)
			alarmsErr = printAlarms(actx, c, w)
			cancel()
		}
		if alarmsErr != nil {
			if _, err := fmt.Fprintf(w, "Alarms unknown: %v\n", alarmsErr); err != nil {
				return err
			}
		}
		switch {
		case len(down) > 0:
			return fmt.Errorf("%d of %d members did not answer: %s", len(down), len(o.servers), strings.Join(down, ", "))
		case alarmsErr != nil:
			return alarmsErr
		}
		return nil
	})
	return cmd
}

// printAlarms prints the cluster's alarms, or that there are none.
func printAlarms(ctx context.Context, c *clientv3.Client, w io.Writer) error {
	resp, err := c.AlarmList(ctx)
	if err != nil {
		return fmt.Errorf("alarm list: %w", err)
	}
	if len(resp.Alarms) == 0 {
		_, err = fmt.Fprintln(w, "No alarms.")
		return err
	}
	for _, a := range resp.Alarms {
		if _, err := fmt.Fprintf(w, "Alarm %s on member %x\n", a.Alarm, a.MemberID); err != nil {
			return err
		}
	}
	return nil
}

// newDefragCommand returns `gcp etcd defrag`: it gives the space that
// compaction freed back to the file system, one member at a time (a
// member does not serve while it defragments).
func newDefragCommand(ctx context.Context, name string) *cobra.Command {
	o := &clientOptions{name: name}
	cmd := &cobra.Command{
		Use:   "defrag",
		Short: "Defragment each member's database, one member at a time, to return the space compaction freed",
		Args:  cobra.NoArgs,
	}
	o.addFlags(cmd.Flags())
	cmd.RunE = o.run(ctx, func(ctx context.Context, c *clientv3.Client, w io.Writer) error {
		for _, ep := range o.servers {
			before, err := c.Status(ctx, ep)
			if err != nil {
				return fmt.Errorf("%s: %w", ep, err)
			}
			if _, err := c.Defragment(ctx, ep); err != nil {
				return fmt.Errorf("defragment %s: %w", ep, err)
			}
			after, err := c.Status(ctx, ep)
			if err != nil {
				return fmt.Errorf("%s: %w", ep, err)
			}
			if _, err := fmt.Fprintf(w, "Defragmented %s: %s → %s\n", ep, gcpetcd.HumanBytes(before.DbSize), gcpetcd.HumanBytes(after.DbSize)); err != nil {
				return err
			}
		}
		return nil
	})
	return cmd
}

// newCompactCommand returns `gcp etcd compact`: it discards the history
// before a revision (the current one unless --revision says otherwise), as
// the API server does every --etcd-compaction-interval; defrag then gives
// the space back. After NOSPACE the API server cannot compact (its
// compaction writes a key), so this is how space is freed.
func newCompactCommand(ctx context.Context, name string) *cobra.Command {
	o := &clientOptions{name: name}
	var revision int64
	cmd := &cobra.Command{
		Use:   "compact",
		Short: "Discard the key history before a revision (the current one by default); then defrag frees the space",
		Args:  cobra.NoArgs,
	}
	o.addFlags(cmd.Flags())
	cmd.Flags().Int64Var(&revision, "revision", 0, "Compact up to this revision; 0 means the current one.")
	cmd.RunE = o.run(ctx, func(ctx context.Context, c *clientv3.Client, w io.Writer) error {
		rev := revision
		if rev == 0 {
			resp, err := c.Get(ctx, "compact-revision-probe", clientv3.WithCountOnly())
			if err != nil {
				return fmt.Errorf("current revision: %w", err)
			}
			rev = resp.Header.Revision
		}
		if _, err := c.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
			return fmt.Errorf("compact to revision %d: %w", rev, err)
		}
		_, err := fmt.Fprintf(w, "Compacted to revision %d\n", rev)
		return err
	})
	return cmd
}

// newAlarmCommand returns `gcp etcd alarm list|disarm`.
func newAlarmCommand(ctx context.Context, name string) *cobra.Command {
	o := &clientOptions{name: name}
	cmd := &cobra.Command{
		Use:   "alarm",
		Short: "List or disarm the cluster's alarms (NOSPACE when the database reached --quota-backend-bytes, CORRUPT)",
		Args:  cobra.NoArgs,
	}
	o.addFlags(cmd.PersistentFlags())
	list := &cobra.Command{
		Use:   "list",
		Short: "List the alarms",
		Args:  cobra.NoArgs,
		RunE:  o.run(ctx, func(ctx context.Context, c *clientv3.Client, w io.Writer) error { return printAlarms(ctx, c, w) }),
	}
	disarm := &cobra.Command{
		Use:   "disarm",
		Short: "Disarm every alarm; after NOSPACE, compact and defragment first or it is raised again",
		Args:  cobra.NoArgs,
		RunE: o.run(ctx, func(ctx context.Context, c *clientv3.Client, w io.Writer) error {
			resp, err := c.AlarmList(ctx)
			if err != nil {
				return fmt.Errorf("alarm list: %w", err)
			}
			for _, a := range resp.Alarms {
				if _, err := c.AlarmDisarm(ctx, (*clientv3.AlarmMember)(a)); err != nil {
					return fmt.Errorf("disarm %s on member %x: %w", a.Alarm, a.MemberID, err)
				}
				if _, err := fmt.Fprintf(w, "Disarmed %s on member %x\n", a.Alarm, a.MemberID); err != nil {
					return err
				}
			}
			if len(resp.Alarms) == 0 {
				_, err = fmt.Fprintln(w, "No alarms.")
			}
			return err
		}),
	}
	cmd.AddCommand(list, disarm)
	return cmd
}
