//! Topologies: hosts and switches joined by full-duplex links, and the shortest-path routes
//! (with every equal-cost next hop kept for ECMP) the switches forward on.

use std::collections::VecDeque;

use super::NetError;

/// Index of a node (host or switch) in [`Topology::nodes`].
pub type NodeId = u32;

/// What a node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// An RDMA host: one NIC port.
    Host,
    /// An output-queued switch.
    Switch,
}

/// A host or a switch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// Name used by scenarios and metrics (`h0`, `sw1`).
    pub name: String,
    /// Host or switch.
    pub kind: NodeKind,
}

/// A full-duplex link: the same rate and propagation delay both ways.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinkSpec {
    /// One end.
    pub a: NodeId,
    /// The other end.
    pub b: NodeId,
    /// Line rate, bits per second.
    pub rate_bps: u64,
    /// Propagation delay, ns.
    pub prop_ns: u64,
}

/// Nodes and links. A node's ports are numbered in the order its links are listed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Topology {
    /// Hosts and switches.
    pub nodes: Vec<Node>,
    /// Links.
    pub links: Vec<LinkSpec>,
}

impl Topology {
    /// Add a node; returns its id.
    pub fn add_node(&mut self, name: impl Into<String>, kind: NodeKind) -> NodeId {
        self.nodes.push(Node {
            name: name.into(),
            kind,
        });
        (self.nodes.len() - 1) as NodeId
    }

    /// Add a link between `a` and `b`.
    pub fn add_link(&mut self, a: NodeId, b: NodeId, rate_bps: u64, prop_ns: u64) {
        self.links.push(LinkSpec {
            a,
            b,
            rate_bps,
            prop_ns,
        });
    }

    /// The node named `name`.
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.nodes
            .iter()
            .position(|n| n.name == name)
            .map(|i| i as NodeId)
    }

    /// Ids of the hosts, in node order.
    pub fn hosts(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.kind == NodeKind::Host)
            .map(|(i, _)| i as NodeId)
    }

    /// N-to-1 incast: hosts `h0`..`h{n-1}` (senders) and `h{n}` (receiver) on one switch
    /// `sw0`. The senders' links run at `host_bps`, the receiver's at `receiver_bps` (the
    /// bottleneck). With `n = 1` and a slower receiver link this is the classic two-host
    /// bottleneck.
    pub fn incast(n: u32, host_bps: u64, receiver_bps: u64, prop_ns: u64) -> Self {
        let mut t = Topology::default();
        let hosts: Vec<NodeId> = (0..=n)
            .map(|i| t.add_node(format!("h{i}"), NodeKind::Host))
            .collect();
        let sw = t.add_node("sw0", NodeKind::Switch);
        for (i, &h) in hosts.iter().enumerate() {
            let rate = if i as u32 == n {
                receiver_bps
            } else {
                host_bps
            };
            t.add_link(h, sw, rate, prop_ns);
        }
        t
    }

    /// Dumbbell: senders `h0`..`h{n-1}` on `sw0`, receivers `h{n}`..`h{2n-1}` on `sw1`, and the
    /// bottleneck link `sw0`–`sw1` at `bottleneck_bps`.
    pub fn dumbbell(n: u32, host_bps: u64, bottleneck_bps: u64, prop_ns: u64) -> Self {
        let mut t = Topology::default();
        let hosts: Vec<NodeId> = (0..2 * n)
            .map(|i| t.add_node(format!("h{i}"), NodeKind::Host))
            .collect();
        let s0 = t.add_node("sw0", NodeKind::Switch);
        let s1 = t.add_node("sw1", NodeKind::Switch);
        t.add_link(s0, s1, bottleneck_bps, prop_ns);
        for (i, &h) in hosts.iter().enumerate() {
            t.add_link(h, if (i as u32) < n { s0 } else { s1 }, host_bps, prop_ns);
        }
        t
    }

    /// A chain of `switches` switches `sw0`–`sw1`–…, the inter-switch links at
    /// `bottleneck_bps` (with 3 switches: two bottlenecks in a row), and `hosts_per_switch`
    /// hosts on each switch: `h{s * hosts_per_switch + i}` on `sw{s}`.
    pub fn chain(
        switches: u32,
        hosts_per_switch: u32,
        host_bps: u64,
        bottleneck_bps: u64,
        prop_ns: u64,
    ) -> Self {
        let mut t = Topology::default();
        let hosts: Vec<NodeId> = (0..switches * hosts_per_switch)
            .map(|i| t.add_node(format!("h{i}"), NodeKind::Host))
            .collect();
        let sws: Vec<NodeId> = (0..switches)
            .map(|i| t.add_node(format!("sw{i}"), NodeKind::Switch))
            .collect();
        for w in sws.windows(2) {
            t.add_link(w[0], w[1], bottleneck_bps, prop_ns);
        }
        for (i, &h) in hosts.iter().enumerate() {
            t.add_link(h, sws[i / hosts_per_switch as usize], host_bps, prop_ns);
        }
        t
    }

    /// A k-ary fat tree (Al-Fares et al., SIGCOMM 2008): k pods of k/2 edge and k/2
    /// aggregation switches, (k/2)^2 core switches, k^3/4 hosts (16 for k = 4), every link at
    /// `link_bps`. Hosts `h0`.. in pod order; edge switches `e{pod}_{i}`, aggregation
    /// `a{pod}_{i}`, core `c{i}`.
    pub fn fat_tree(k: u32, link_bps: u64, prop_ns: u64) -> Result<Self, NetError> {
        if k < 2 || !k.is_multiple_of(2) || k > 16 {
            return Err(NetError::Config(format!(
                "fat tree k = {k}: k must be even, 2..=16"
            )));
        }
        let h = k / 2;
        let mut t = Topology::default();
        let hosts: Vec<NodeId> = (0..k * h * h)
            .map(|i| t.add_node(format!("h{i}"), NodeKind::Host))
            .collect();
        let mut edge = Vec::new();
        let mut agg = Vec::new();
        for p in 0..k {
            for i in 0..h {
                edge.push(t.add_node(format!("e{p}_{i}"), NodeKind::Switch));
            }
            for i in 0..h {
                agg.push(t.add_node(format!("a{p}_{i}"), NodeKind::Switch));
            }
        }
        let core: Vec<NodeId> = (0..h * h)
            .map(|i| t.add_node(format!("c{i}"), NodeKind::Switch))
            .collect();
        for (i, &host) in hosts.iter().enumerate() {
            t.add_link(host, edge[i / h as usize], link_bps, prop_ns);
        }
        for p in 0..k {
            for e in 0..h {
                for a in 0..h {
                    t.add_link(
                        edge[(p * h + e) as usize],
                        agg[(p * h + a) as usize],
                        link_bps,
                        prop_ns,
                    );
                }
            }
            for a in 0..h {
                for c in 0..h {
                    t.add_link(
                        agg[(p * h + a) as usize],
                        core[(a * h + c) as usize],
                        link_bps,
                        prop_ns,
                    );
                }
            }
        }
        Ok(t)
    }

    /// Check names are unique, links join existing distinct nodes, hosts have exactly one link,
    /// rates and delays are in range, and every host reaches every other.
    pub fn validate(&self) -> Result<(), NetError> {
        let bad = |m: String| Err(NetError::Config(m));
        if self.nodes.len() > u16::MAX as usize {
            return bad(format!("{} nodes: at most 65535", self.nodes.len()));
        }
        let mut names: Vec<&str> = self.nodes.iter().map(|n| n.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return bad(format!("node name `{}` is used twice", w[0]));
        }
        let mut degree = vec![0u32; self.nodes.len()];
        for l in &self.links {
            if l.a == l.b || l.a as usize >= self.nodes.len() || l.b as usize >= self.nodes.len() {
                return bad(format!("link {}–{}: not two distinct nodes", l.a, l.b));
            }
            if l.rate_bps == 0 || l.rate_bps > 10_000_000_000_000 {
                return bad(format!(
                    "link rate {} bps: must be in 1..=10^13",
                    l.rate_bps
                ));
            }
            if l.prop_ns > 1_000_000_000 {
                return bad(format!("propagation delay {} ns: at most 1 s", l.prop_ns));
            }
            degree[l.a as usize] += 1;
            degree[l.b as usize] += 1;
        }
        for (i, n) in self.nodes.iter().enumerate() {
            if n.kind == NodeKind::Host && degree[i] != 1 {
                return bad(format!(
                    "host {} has {} links: a host has one NIC",
                    n.name, degree[i]
                ));
            }
            if n.kind == NodeKind::Switch && degree[i] > 256 {
                return bad(format!("switch {} has more than 256 ports", n.name));
            }
        }
        Ok(())
    }
}

/// Per node, its ports: (peer node, peer's port index, link index).
pub(crate) type PortMap = Vec<Vec<(NodeId, u16, u32)>>;

/// The ports of every node, in link order.
pub(crate) fn port_map(t: &Topology) -> PortMap {
    let mut ports: PortMap = vec![Vec::new(); t.nodes.len()];
    for (li, l) in t.links.iter().enumerate() {
        let pa = ports[l.a as usize].len() as u16;
        let pb = ports[l.b as usize].len() as u16;
        ports[l.a as usize].push((l.b, pb, li as u32));
        ports[l.b as usize].push((l.a, pa, li as u32));
    }
    ports
}

/// Shortest-path (hop count) next hops: for every (node, destination host), the node's ports
/// that start a shortest path. ECMP picks among them.
///
/// Read at every hop, so kept small enough for the caches (the shipped ns-3 fat tree: 376
/// nodes × 320 hosts of 8-byte entries were 962 KB and a miss per hop): rows only for nodes
/// with more than one port (a single port is the route), and a node's equal port lists
/// stored once.
#[derive(Clone, Debug)]
pub(crate) struct Routes {
    /// `row[node]`: the node's row in `index`, or `NO_ROW` for a node with one port.
    row: Vec<u32>,
    /// `index[row * n_hosts + host]` = (start, len) into `ports`.
    index: Vec<(u32, u16)>,
    ports: Vec<u16>,
    n_hosts: usize,
}

/// [`Routes::row`] of a node with one port: its port 0 is every route.
const NO_ROW: u32 = u32::MAX;

impl Routes {
    /// `host_slot[node]` = the node's host number (dense, in node order) for hosts. Links
    /// whose `down[link]` is true carry nothing (an empty `down`: every link is up).
    pub(crate) fn build(
        t: &Topology,
        ports: &PortMap,
        host_nodes: &[NodeId],
        down: &[bool],
    ) -> Result<Self, NetError> {
        let up = |li: u32| !down.get(li as usize).copied().unwrap_or(false);
        let n = t.nodes.len();
        let nh = host_nodes.len();
        let mut row = vec![NO_ROW; n];
        let mut rows = 0u32;
        for (u, r) in row.iter_mut().enumerate() {
            if ports[u].len() > 1 {
                *r = rows;
                rows += 1;
            }
        }
        let mut index = vec![(0u32, 0u16); rows as usize * nh];
        let mut out: Vec<u16> = Vec::new();
        // Per node with a row: its port lists so far (start, len), to store each once.
        let mut lists: Vec<Vec<(u32, u16)>> = vec![Vec::new(); rows as usize];
        let mut dist = vec![u32::MAX; n];
        let mut q = VecDeque::new();
        for (hi, &h) in host_nodes.iter().enumerate() {
            dist.fill(u32::MAX);
            dist[h as usize] = 0;
            q.clear();
            q.push_back(h);
            while let Some(u) = q.pop_front() {
                // Paths do not run through other hosts.
                if u != h && t.nodes[u as usize].kind == NodeKind::Host {
                    continue;
                }
                for &(v, _, li) in &ports[u as usize] {
                    if up(li) && dist[v as usize] == u32::MAX {
                        dist[v as usize] = dist[u as usize] + 1;
                        q.push_back(v);
                    }
                }
            }
            for u in 0..n {
                if u as NodeId == h {
                    continue;
                }
                let r = row[u];
                if dist[u] == u32::MAX {
                    return Err(NetError::Config(format!(
                        "{} cannot reach {}",
                        t.nodes[u].name, t.nodes[h as usize].name
                    )));
                }
                let start = out.len() as u32;
                for (pi, &(v, _, li)) in ports[u].iter().enumerate() {
                    let dv = dist[v as usize];
                    // A next hop one step closer; through a host only if it is the destination.
                    if up(li)
                        && dv != u32::MAX
                        && dv + 1 == dist[u]
                        && (v == h || t.nodes[v as usize].kind == NodeKind::Switch)
                    {
                        out.push(pi as u16);
                    }
                }
                let len = (out.len() as u32 - start) as u16;
                if r == NO_ROW {
                    // One port: it is the route (or none, when its link is down).
                    out.truncate(start as usize);
                    continue;
                }
                let new = &out[start as usize..];
                let seen = &mut lists[r as usize];
                let same = seen
                    .iter()
                    .copied()
                    .find(|&(s, l)| l == len && out[s as usize..s as usize + l as usize] == *new);
                index[r as usize * nh + hi] = match same {
                    Some(s) => {
                        out.truncate(start as usize);
                        s
                    }
                    None => {
                        seen.push((start, len));
                        (start, len)
                    }
                };
            }
        }
        Ok(Routes {
            row,
            index,
            ports: out,
            n_hosts: nh,
        })
    }

    /// No routes (a placeholder for routes moved out).
    pub(crate) fn empty() -> Self {
        Routes {
            row: Vec::new(),
            index: Vec::new(),
            ports: Vec::new(),
            n_hosts: 0,
        }
    }

    /// The egress port of `node` towards host number `host`, ECMP by `hash`: the
    /// `hash mod len`-th of the next hops.
    #[inline]
    pub(crate) fn next(&self, node: NodeId, host: usize, hash: u64) -> u16 {
        let r = self.row.get(node as usize).copied().unwrap_or(NO_ROW);
        if r == NO_ROW {
            return 0;
        }
        let (start, len) = self.index[r as usize * self.n_hosts + host];
        if len <= 1 {
            return self.ports.get(start as usize).copied().unwrap_or(0);
        }
        let len = u64::from(len);
        // A fat tree's fan-outs are powers of two: the same remainder without a division.
        let k = if len.is_power_of_two() {
            hash & (len - 1)
        } else {
            hash % len
        };
        self.ports[start as usize + k as usize]
    }
}
