//! `topology.txt`: nodes, switch ids, links (`src dst rate delay error`), and the paths flows take
//! over it.

use super::*;

/// One link of the topology.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// Node ids.
    pub a: u32,
    /// Node ids.
    pub b: u32,
    /// Rate, bit/s.
    pub rate_bps: u64,
    /// Propagation delay, ns.
    pub delay_ns: u64,
    /// Packet error rate of the link (`RateErrorModel`, per packet).
    pub error_rate: f64,
}

/// `topology.txt`.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    /// Node count.
    pub nodes: u32,
    /// `is_switch[i]`.
    pub is_switch: Vec<bool>,
    /// Links in file order (a node's interfaces are numbered from 1 in this order, as
    /// `QbbHelper::Install` adds devices).
    pub links: Vec<Link>,
    /// Per node: (neighbour, rate, delay) in link order.
    adj: Vec<Vec<(u32, u64, u64)>>,
}

impl Topology {
    /// Parse topology text.
    pub fn parse(text: &str, path: &Path) -> Result<Topology, ImportError> {
        let mut t = Toks::new(path, text);
        let nodes: u32 = t.parse("the node count")?;
        let switches: u32 = t.parse("the switch count")?;
        let links: u32 = t.parse("the link count")?;
        if nodes > 1 << 16 {
            return Err(t.bad(t.line(), format!("{nodes} nodes: at most 65536")));
        }
        let mut is_switch = vec![false; nodes as usize];
        for _ in 0..switches {
            let s: u32 = t.parse("a switch id")?;
            if s >= nodes {
                return Err(t.bad(t.line(), format!("switch id {s} >= node count {nodes}")));
            }
            is_switch[s as usize] = true;
        }
        let mut v = Vec::new();
        for _ in 0..links {
            let a: u32 = t.parse("a link's first node")?;
            let b: u32 = t.parse("a link's second node")?;
            let rate = t.next("a link's rate")?;
            let (rate_text, line) = (rate.text.clone(), rate.line);
            let rate_bps = parse_rate(&rate_text).filter(|&r| r > 0).ok_or_else(|| {
                t.bad(
                    line,
                    format!("link rate `{rate_text}` is not an ns-3 DataRate"),
                )
            })?;
            let delay = t.next("a link's delay")?;
            let (delay_text, line) = (delay.text.clone(), delay.line);
            let delay_ns = parse_time_ns(&delay_text)
                .ok_or_else(|| t.bad(line, format!("link delay `{delay_text}` is not a time")))?;
            let error_rate: f64 = t.parse("a link's error rate")?;
            if a >= nodes || b >= nodes {
                return Err(t.bad(line, format!("link {a}-{b}: node id >= {nodes}")));
            }
            v.push(Link {
                a,
                b,
                rate_bps,
                delay_ns,
                error_rate,
            });
        }
        let mut adj = vec![Vec::new(); nodes as usize];
        for l in &v {
            adj[l.a as usize].push((l.b, l.rate_bps, l.delay_ns));
            adj[l.b as usize].push((l.a, l.rate_bps, l.delay_ns));
        }
        Ok(Topology {
            nodes,
            is_switch,
            links: v,
            adj,
        })
    }

    /// Neighbours of `n`: (node, rate, delay), in link order.
    fn neighbours(&self, n: u32) -> impl Iterator<Item = (u32, u64, u64)> + '_ {
        self.adj.get(n as usize).into_iter().flatten().copied()
    }

    /// The node at the other end of `node`'s interface `intf` (third.cc: device 0 is the
    /// loopback, then one device per link in file order, as [`Topology::links`] says).
    pub fn peer(&self, node: u32, intf: u8) -> Option<u32> {
        let i = (intf as usize).checked_sub(1)?;
        self.adj.get(node as usize)?.get(i).map(|x| x.0)
    }

    /// Whether a link joins `a` and `b`.
    pub fn linked(&self, a: u32, b: u32) -> bool {
        self.neighbours(a).any(|x| x.0 == b)
    }

    /// The rate of a host's NIC (its first link), bit/s.
    pub fn nic_rate_bps(&self, host: u32) -> Option<u64> {
        self.neighbours(host).next().map(|x| x.1)
    }

    /// third.cc `CalculateRoute` from `src`: BFS through switches; for each node reached, its
    /// hop count, summed delay, summed per-hop transmission delay of one `mtu` packet
    /// (`mtu × 8e9 / bw`, integer), and smallest link rate — first path found, links in file
    /// order.
    pub fn paths_from(&self, src: u32, mtu: u64) -> Vec<Option<PathInfo>> {
        let mut out: Vec<Option<PathInfo>> = vec![None; self.nodes as usize];
        out[src as usize] = Some(PathInfo {
            hops: 0,
            delay_ns: 0,
            tx_delay_ns: 0,
            bw_bps: u64::MAX,
        });
        let mut q = vec![src];
        let mut i = 0;
        while i < q.len() {
            let now = q[i];
            i += 1;
            let Some(p) = out[now as usize] else { continue };
            for (next, rate, delay) in self.neighbours(now) {
                if out[next as usize].is_some() {
                    continue;
                }
                out[next as usize] = Some(PathInfo {
                    hops: p.hops + 1,
                    delay_ns: p.delay_ns.saturating_add(delay),
                    tx_delay_ns: p
                        .tx_delay_ns
                        .saturating_add(mtu.saturating_mul(8_000_000_000) / rate),
                    bw_bps: p.bw_bps.min(rate),
                });
                // Only switches forward (hosts are never a middle point).
                if self.is_switch[next as usize] {
                    q.push(next);
                }
            }
        }
        out
    }
}

/// A path found by [`Topology::paths_from`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathInfo {
    /// Links on the path.
    pub hops: u32,
    /// Summed propagation delay, ns.
    pub delay_ns: u64,
    /// Summed transmission delay of one MTU packet, ns.
    pub tx_delay_ns: u64,
    /// Smallest link rate, bit/s.
    pub bw_bps: u64,
}

impl PathInfo {
    /// third.cc: `rtt = delay × 2 + txDelay`.
    pub fn rtt_ns(&self) -> u64 {
        self.delay_ns
            .saturating_mul(2)
            .saturating_add(self.tx_delay_ns)
    }
    /// third.cc: `bdp = rtt × bw / 1e9 / 8` (integer).
    pub fn bdp_bytes(&self) -> u64 {
        ((self.rtt_ns() as u128 * self.bw_bps as u128) / 1_000_000_000 / 8) as u64
    }
}
