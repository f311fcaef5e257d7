package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/grpclog"

	gcpetcd "github.com/gcp-project/gcp/pkg/controlplane/etcd"
)

// clientOptions are how a `gcp etcd` subcommand reaches the cluster: the
// etcd client flags `gcp apiserver` takes.
type clientOptions struct {
	// name is the product's, for the flags' help.
	name              string
	servers           []string
	caFile, cert, key string
	timeout           time.Duration
}

func (o *clientOptions) addFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&o.servers, "etcd-servers", []string{gcpetcd.DefaultListenClientURL}, "Client URLs of the cluster's members, comma separated.")
	fs.StringVar(&o.caFile, "etcd-cafile", "", "CA bundle that signs the members' serving certificates (the etcd CA).")
	fs.StringVar(&o.cert, "etcd-certfile", "", "Client certificate from the etcd CA ("+o.name+" pki init makes apiserver-etcd-client.crt).")
	fs.StringVar(&o.key, "etcd-keyfile", "", "Key of --etcd-certfile.")
	fs.DurationVar(&o.timeout, "command-timeout", 10*time.Second, "How long to wait for the cluster.")
}

// config returns the client configuration the flags say.
func (o *clientOptions) config() (clientv3.Config, error) {
	// The client retries unreachable members by itself; its logs would
	// bury the command's answer, and errors come back to the command.
	grpclog.SetLoggerV2(grpclog.NewLoggerV2(io.Discard, io.Discard, io.Discard))
	return gcpetcd.ClientConfig(o.servers, o.cert, o.key, o.caFile, o.timeout)
}

// connect returns a client of the cluster; close it when done.
func (o *clientOptions) connect() (*clientv3.Client, error) {
	cfg, err := o.config()
	if err != nil {
		return nil, err
	}
	return clientv3.New(cfg)
}

// run returns a cobra RunE that calls f with a client of the cluster and
// a deadline of --command-timeout.
func (o *clientOptions) run(ctx context.Context, f func(context.Context, *clientv3.Client, io.Writer) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, _ []string) error {
		c, err := o.connect()
		if err != nil {
			return err
		}
		defer func() { _ = c.Close() }()
		ctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		return f(ctx, c, cmd.OutOrStdout())
	}
}

// newMemberCommand returns `gcp etcd member`, the cluster's membership as
// `etcdctl member` manages it: new members join as learners and are
// promoted once they have caught up.
func newMemberCommand(ctx context.Context, name string) *cobra.Command {
	o := &clientOptions{name: name}
	cmd := &cobra.Command{
		Use:   "member",
		Short: "List, add, promote and remove the members of a " + name + " etcd cluster",
		Args:  cobra.NoArgs,
	}
	o.addFlags(cmd.PersistentFlags())

	list := &cobra.Command{
		Use:   "list",
		Short: "List the members: ID, name, status, whether a learner, peer and client URLs",
		Args:  cobra.NoArgs,
		RunE: o.run(ctx, func(ctx context.Context, c *clientv3.Client, w io.Writer) error {
			resp, err := c.MemberList(ctx)
			if err != nil {
				return fmt.Errorf("member list: %w", err)
			}
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tLEARNER\tPEER URLS\tCLIENT URLS")
			for _, m := range resp.Members {
				status := "started"
				if m.Name == "" {
					status = "unstarted"
				}
				fmt.Fprintf(tw, "%x\t%s\t%s\t%t\t%s\t%s\n", m.ID, m.Name, status, m.IsLearner,
					strings.Join(m.PeerURLs, ","), strings.Join(m.ClientURLs, ","))
			}
			return tw.Flush()
		}),
	}

	var peerURLs []string
	var voter bool
	add := &cobra.Command{
		Use:   "add NAME --peer-urls URL[,URL]",
		Short: "Add a member as a learner and print the flags to start it with",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(peerURLs) == 0 {
				return errors.New("--peer-urls is required: the new member's --initial-advertise-peer-urls")
			}
			return o.run(ctx, func(ctx context.Context, c *clientv3.Client, w io.Writer) error {
				var resp *clientv3.MemberAddResponse
				var err error
				if voter {
					resp, err = c.MemberAdd(ctx, peerURLs)
				} else {
					resp, err = c.MemberAddAsLearner(ctx, peerURLs)
				}
				if err != nil {
					if rpctypes.ErrorDesc(err) == rpctypes.ErrUnhealthy.Error() {
						return fmt.Errorf("member add: %w (etcd adds members only when every member has been connected for 5 s; retry)", err)
					}
					return fmt.Errorf("member add: %w", err)
				}
				var initial []string
				for _, m := range resp.Members {
					member := m.Name
					if m.ID == resp.Member.ID {
						member = args[0]
					}
					for _, u := range m.PeerURLs {
						initial = append(initial, member+"="+u)
					}
				}
				what := "as a learner"
				next := "Once it has caught up (" + name + " etcd status, with its client URL added to --etcd-servers, shows its RAFT INDEX near the leader's), " +
					"make it a voting member:\n  " + name + " etcd member promote " + args[0] + " " + o.flags(o.servers)
				if voter {
					what, next = "as a voting member", ""
				}
				_, err = fmt.Fprintf(w, "Added member %x (%s) %s. Start it with:\n  %s etcd --name %s --initial-advertise-peer-urls %s --initial-cluster %s --initial-cluster-state existing ...\n%s\n",
					resp.Member.ID, args[0], what, name, args[0], strings.Join(peerURLs, ","), strings.Join(initial, ","), next)
				return err
			})(cmd, nil)
		},
	}
	add.Flags().StringSliceVar(&peerURLs, "peer-urls", nil, "The new member's peer URLs.")
	add.Flags().BoolVar(&voter, "voter", false, "Add a voting member at once instead of a learner; the cluster's quorum grows before the member is up.")

	// byName returns a subcommand that does act to the member its one
	// argument names and says what it did (did formats the ID and name).
	byName := func(use, short, did string, act func(context.Context, *clientv3.Client, *etcdserverpb.Member) error) *cobra.Command {
		return &cobra.Command{
			Use:   use + " NAME|ID",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return o.run(ctx, func(ctx context.Context, c *clientv3.Client, w io.Writer) error {
					m, err := findMember(ctx, c, args[0])
					if err != nil {
						return err
					}
					if err := act(ctx, c, m); err != nil {
						return fmt.Errorf("member %s %s: %w", use, args[0], err)
					}
					_, err = fmt.Fprintf(w, did+"\n", m.ID, m.Name)
					return err
				})(cmd, nil)
			},
		}
	}
	promote := byName("promote", "Make a learner a voting member; it must have caught up with the leader", "Promoted member %x (%s) to a voting member.",
		func(ctx context.Context, c *clientv3.Client, m *etcdserverpb.Member) error {
			_, err := c.MemberPromote(ctx, m.ID)
			if err != nil && rpctypes.ErrorDesc(err) == rpctypes.ErrMemberLearnerNotReady.Error() {
				return fmt.Errorf("%w (%s; etcd promotes a learner at 90%% of the leader's; retry)", err, learnerProgress(ctx, c, o.servers, m))
			}
			return err
		})
	remove := byName("remove", "Remove a member from the cluster", "Removed member %x (%s).",
		func(ctx context.Context, c *clientv3.Client, m *etcdserverpb.Member) error {
			// A member asked to remove itself applies the change and stops,
			// and may stop before it answers ("etcdserver: server
			// stopped"): ask another member, and when the answer is lost
			// all the same, look whether the member is gone.
			if others := endpointsExcept(c.Endpoints(), m.ClientURLs); len(others) > 0 {
				c.SetEndpoints(others...)
			}
			_, err := c.MemberRemove(ctx, m.ID)
			if err != nil {
				if list, listErr := c.MemberList(ctx); listErr == nil && !slices.ContainsFunc(list.Members, func(o *etcdserverpb.Member) bool { return o.ID == m.ID }) {
					return nil
				}
			}
			return err
		})
	cmd.AddCommand(list, add, promote, remove)
	return cmd
}

// flags returns the connection flags given, with --etcd-servers set to
// servers, as they are typed on a command line.
func (o *clientOptions) flags(servers []string) string {
	out := []string{"--etcd-servers", strings.Join(servers, ",")}
	for _, f := range [][2]string{{"--etcd-cafile", o.caFile}, {"--etcd-certfile", o.cert}, {"--etcd-keyfile", o.key}} {
		if f[1] != "" {
			out = append(out, f[0], f[1])
		}
	}
	for i, w := range out {
		if strings.ContainsAny(w, " \t'\"$\\") {
			out[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
		}
	}
	return strings.Join(out, " ")
}

// learnerProgress says how far a learner is behind the leader, by their
// raft indexes, or why it cannot say.
func learnerProgress(ctx context.Context, c *clientv3.Client, servers []string, learner *etcdserverpb.Member) string {
	if len(learner.ClientURLs) == 0 {
		return "it has not started yet"
	}
	ctx, cancel := context.WithTimeout(ctx, memberStatusTimeout)
	defer cancel()
	mine, err := c.Status(ctx, learner.ClientURLs[0])
	if err != nil {
		return fmt.Sprintf("its status: %v", err)
	}
	leaderID, err := leaderOf(ctx, c, servers)
	if err != nil {
		return fmt.Sprintf("its raft index is %d; %v", mine.RaftIndex, err)
	}
	for _, ep := range servers {
		st, err := c.Status(ctx, ep)
		if err == nil && st.Header.MemberId == leaderID {
			return fmt.Sprintf("its raft index is %d, the leader's %d", mine.RaftIndex, st.RaftIndex)
		}
	}
	return fmt.Sprintf("its raft index is %d; the leader is none of --etcd-servers", mine.RaftIndex)
}

// endpointsExcept returns the endpoints that are none of a member's client
// URLs (compared as written, without a trailing slash).
func endpointsExcept(endpoints, memberURLs []string) []string {
	var out []string
	for _, e := range endpoints {
		if !slices.ContainsFunc(memberURLs, func(u string) bool { return strings.TrimSuffix(u, "/") == strings.TrimSuffix(e, "/") }) {
			out = append(out, e)
		}
	}
	return out
}

// findMember returns the member named, or with the hex ID, nameOrID.
func findMember(ctx context.Context, c *clientv3.Client, nameOrID string) (*etcdserverpb.Member, error) {
	resp, err := c.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("member list: %w", err)
	}
	return memberByNameOrID(resp.Members, nameOrID)
}

// memberByNameOrID returns the member of members named, or with the hex
// ID, nameOrID.
func memberByNameOrID(members []*etcdserverpb.Member, nameOrID string) (*etcdserverpb.Member, error) {
	id, idErr := strconv.ParseUint(nameOrID, 16, 64)
	i := slices.IndexFunc(members, func(m *etcdserverpb.Member) bool {
		return m.Name == nameOrID || (idErr == nil && m.ID == id)
	})
	if i < 0 {
		return nil, fmt.Errorf("no member named or with ID %q", nameOrID)
	}
	return members[i], nil
}
