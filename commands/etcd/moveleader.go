package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// newMoveLeaderCommand returns `gcp etcd move-leader`, etcdctl's
// move-leader: the leader hands its leadership to the member named, at
// once and without an election timeout. Stopping or removing the leader
// instead costs an election, during which writes fail.
func newMoveLeaderCommand(ctx context.Context, name string) *cobra.Command {
	o := &clientOptions{name: name}
	cmd := &cobra.Command{
		Use:   "move-leader NAME|ID",
		Short: "Make another voting member the leader; do this before stopping or removing the leader",
		Long: "Make another voting member the leader, as etcdctl move-leader does: the leader hands over at once, so writes go on, " +
			"where stopping or removing the leader costs an election during which writes fail. " +
			"The leader is found among --etcd-servers (or, if none of them leads, by its client URLs in the member list).",
		Args: cobra.ExactArgs(1),
	}
	o.addFlags(cmd.Flags())
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		return o.run(ctx, func(ctx context.Context, c *clientv3.Client, w io.Writer) error {
			return moveLeader(ctx, c, o.servers, args[0], name, w)
		})(cmd, nil)
	}
	return cmd
}

// moveLeader makes the member named (or with the hex ID) nameOrID the
// leader, asking the current leader, which is the only member that can.
func moveLeader(ctx context.Context, c *clientv3.Client, servers []string, nameOrID, product string, w io.Writer) error {
	list, err := c.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("member list: %w", err)
	}
	target, err := memberByNameOrID(list.Members, nameOrID)
	if err != nil {
		return err
	}
	if target.IsLearner {
		return fmt.Errorf("member %x (%s) is a learner, which cannot lead: promote it first (%s etcd member promote %s)", target.ID, target.Name, product, target.Name)
	}
	leaderID, err := leaderOf(ctx, c, servers)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(list.Members, func(m *etcdserverpb.Member) bool { return m.ID == leaderID })
	if i < 0 {
		return fmt.Errorf("the leader %x is not in the member list; retry", leaderID)
	}
	leader := list.Members[i]
	if leader.ID == target.ID {
		_, err := fmt.Fprintf(w, "Member %x (%s) is the leader already.\n", leader.ID, leader.Name)
		return err
	}
	if len(leader.ClientURLs) == 0 {
		return fmt.Errorf("the leader %x (%s) has no client URLs to ask", leader.ID, leader.Name)
	}
	c.SetEndpoints(leader.ClientURLs...)
	if _, err := c.MoveLeader(ctx, target.ID); err != nil {
		return fmt.Errorf("move-leader from %x (%s) to %x (%s): %w", leader.ID, leader.Name, target.ID, target.Name, err)
	}
	_, err = fmt.Fprintf(w, "Leadership moved from member %x (%s) to member %x (%s).\n", leader.ID, leader.Name, target.ID, target.Name)
	return err
}

// leaderOf returns the leader's ID as the first of servers that answers
// knows it.
func leaderOf(ctx context.Context, c *clientv3.Client, servers []string) (uint64, error) {
	var errs []error
	for _, ep := range servers {
		sctx, cancel := context.WithTimeout(ctx, memberStatusTimeout)
		st, err := c.Status(sctx, ep)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ep, err))
			continue
		}
		if st.Leader != 0 {
			return st.Leader, nil
		}
		errs = append(errs, fmt.Errorf("%s: knows no leader (an election may be under way)", ep))
	}
	return 0, fmt.Errorf("finding the leader: %w", errors.Join(errs...))
}
