//! The output files: one events file per host and side, staged and renamed into place only when the
//! whole import succeeds.

use super::*;

/// Which side of a flow a file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) enum Side {
    Sender,
    Receiver,
}

/// One output events file: its flows (global flow index → local id) and writer.
pub(super) struct Group {
    pub(super) side: Side,
    pub(super) host: u32,
    pub(super) stem: String,
    pub(super) flows: Vec<usize>,
    pub(super) w: BufWriter<File>,
    pub(super) path: PathBuf,
    /// Renames the complete file onto `path`; removes it if the import fails.
    pub(super) pending: Option<crate::outfile::Pending>,
    pub(super) base_rtt_ns: u64,
    pub(super) win_bytes: u64,
    /// HPCC: ACKs written without INT (the pcap needs none).
    pub(super) acks_without_int: u64,
    /// Events written.
    pub(super) events: u64,
}

/// Stage a manifest at `path`: written to its temporary file, renamed by the returned guard's
/// `commit` (removed if it is dropped).
pub(super) fn stage_manifest(
    path: &Path,
    m: &Manifest,
) -> Result<crate::outfile::Pending, ImportError> {
    let body = toml::to_string(m).map_err(|e| {
        ImportError::Unsupported(format!(
            "{}: cannot write the manifest: {e}",
            path.display()
        ))
    })?;
    let io = |source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    };
    let (mut f, pending) = crate::outfile::Pending::create(path).map_err(io)?;
    f.write_all(body.as_bytes())
        .and_then(|()| f.flush())
        .map_err(io)?;
    Ok(pending)
}

/// The output folder, created for this import: the folders it had to create are removed again
/// (when still empty) unless [`OutDir::keep`] is called, so a failed import leaves no folder
/// behind.
pub(super) struct OutDir {
    pub(super) created: Vec<PathBuf>,
}

impl OutDir {
    pub(super) fn create(dir: &Path) -> Result<OutDir, ImportError> {
        let mut created = Vec::new();
        let mut d = Some(dir);
        while let Some(p) = d {
            if p.as_os_str().is_empty() || p.exists() {
                break;
            }
            created.push(p.to_path_buf());
            d = p.parent();
        }
        std::fs::create_dir_all(dir).map_err(|source| ImportError::Io {
            path: dir.into(),
            source,
        })?;
        Ok(OutDir { created })
    }

    pub(super) fn keep(mut self) {
        self.created.clear();
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        // Deepest first; `remove_dir` leaves a folder someone else wrote into.
        for d in &self.created {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// Where the bytes of a staged file are until it is committed (a special file is written in
/// place, see `outfile::create`).
fn staged_path(path: &Path) -> PathBuf {
    if crate::outfile::is_special(path) {
        path.into()
    } else {
        crate::outfile::temp_path(path)
    }
}

/// What every manifest of an import says of the simulator's run.
pub(super) struct Run<'a> {
    pub(super) cfg: &'a Config,
    pub(super) cc_mode: u64,
    pub(super) hpcc: bool,
    pub(super) global_t: u64,
    pub(super) mtu: u64,
    pub(super) flows: &'a [Flow],
    pub(super) topo: &'a Topology,
    /// The traced hosts (None: the trace list is unknown).
    pub(super) traced: &'a Option<Vec<u32>>,
    /// The output folder.
    pub(super) out: &'a Path,
    /// The config as the command line named it.
    pub(super) config_name: &'a str,
}

/// Stage one group's files onto `staged`: its events file and manifest, and the same events
/// as a pcap with its manifest when every frame can be made from them. What is not written
/// (a group without events, HPCC's receiver manifest, a pcap with ACKs lacking INT) is said
/// in `summary`'s warnings.
pub(super) fn stage_group(
    g: &mut Group,
    run: &Run<'_>,
    staged: &mut Vec<(PathBuf, crate::outfile::Pending)>,
    summary: &mut Summary,
    model_warnings: &mut Vec<String>,
) -> Result<(), ImportError> {
    let Run {
        cfg,
        cc_mode,
        hpcc,
        global_t,
        mtu,
        flows,
        topo,
        traced,
        out,
        config_name,
    } = *run;
    let Some(events_pending) = g.pending.take() else {
        return Ok(());
    };
    if g.events == 0 {
        // Every flow has events somewhere, so this is the side of untraced hosts.
        summary.warnings.push(format!(
            "{}: not written: no events (host {} {})",
            g.path.display(),
            g.host,
            if traced.as_ref().is_some_and(|t| !t.contains(&g.host)) {
                "is not in the trace list"
            } else {
                "has no record of these flows"
            }
        ));
        return Ok(());
    }
    let events_at = staged_path(&g.path);
    staged.push((g.path.clone(), events_pending));
    let models = match g.side {
        Side::Sender => sender_models(cfg, cc_mode, g.win_bytes, model_warnings),
        Side::Receiver if !hpcc => vec![ModelSpec {
            name: "dcqcn-np".into(),
            params: toml::Table::new(),
        }],
        Side::Receiver => {
            summary.warnings.push(format!(
                "{}: events only, no manifest (HPCC has no receiver model)",
                g.path.display()
            ));
            return Ok(());
        }
    };
    let host_ip = IpAddr::V4(Ipv4Addr::from(node_ip(g.host)));
    let flows_spec = g
        .flows
        .iter()
        .map(|&fi| {
            let f = &flows[fi];
            let (local, remote) = match g.side {
                Side::Sender => (f.src, f.dst),
                Side::Receiver => (f.dst, f.src),
            };
            // ns-3 has no QPs: numbered from the flow's source port, sender 0x01xxxx,
            // receiver 0x02xxxx.
            let (lq, rq) = match g.side {
                Side::Sender => (0x01_0000 | f.sport as u32, 0x02_0000 | f.sport as u32),
                Side::Receiver => (0x02_0000 | f.sport as u32, 0x01_0000 | f.sport as u32),
            };
            FlowSpec {
                local_ip: IpAddr::V4(Ipv4Addr::from(node_ip(local))),
                local_qp: lq,
                remote_ip: IpAddr::V4(Ipv4Addr::from(node_ip(remote))),
                remote_qp: rq,
            }
        })
        .collect();
    let m = Manifest {
        capture: None,
        events: Some(format!("{}.jsonl", g.stem)),
        dialect: if hpcc { Dialect::Hpcc } else { Dialect::Roce },
        capture_point: match g.side {
            Side::Sender => CapturePoint::Sender { host: host_ip },
            Side::Receiver => CapturePoint::Receiver { host: host_ip },
        },
        network: Network {
            link_rate_bps: topo.nic_rate_bps(g.host).unwrap_or(1),
            base_rtt_ns: g.base_rtt_ns.max(1),
            mtu_bytes: mtu,
            udp_port: 4791,
            ..Network::default()
        },
        int: IntSection::default(),
        models,
        flows: flows_spec,
        source: Source {
            kind: "synthesized".into(),
            generator: format!(
                "ns-3 HPCC simulator (alibaba-edu/High-Precision-Congestion-Control), \
                 ccreplay import ns3 {config_name}"
            ),
            seed: None,
            notes: Some(format!(
                "CC_MODE {cc_mode}; flows of flow.txt in order (flow i = [[flows]] entry i); \
                 base_rtt_ns / win from third.cc's {} RTT and BDP",
                if global_t == 1 {
                    "largest (GLOBAL_T 1)"
                } else {
                    "pair's (GLOBAL_T 0)"
                }
            )),
        },
        observed: Default::default(),
        mirror: Default::default(),
    };
    let path = out.join(format!("{}.toml", g.stem));
    staged.push((path.clone(), stage_manifest(&path, &m)?));
    // The same events as packets, when every frame can be made from them: an HPCC ACK
    // without its INT cannot.
    if g.acks_without_int > 0 {
        summary
            .warnings
            .push(format!("{}: no pcap (ACKs without INT)", g.path.display()));
        return Ok(());
    }
    let pflows: Vec<PcapFlow> = g
        .flows
        .iter()
        .zip(&m.flows)
        .map(|(&fi, spec)| PcapFlow {
            spec: spec.clone(),
            udp_src_port: flows[fi].sport,
            message_bytes: flows[fi].size_bytes,
        })
        .collect();
    let stem = format!("{}_capture", g.stem);
    let pcap = out.join(format!("{stem}.pcap"));
    let (_, pcap_pending) = stage_pcap(&events_at, &pcap, m.dialect, &m.capture_point, &pflows)?;
    staged.push((pcap, pcap_pending));
    let mut mc = m.clone();
    mc.events = None;
    mc.capture = Some(format!("{stem}.pcap"));
    let path = out.join(format!("{stem}.toml"));
    staged.push((path.clone(), stage_manifest(&path, &mc)?));
    summary.pcaps += 1;
    Ok(())
}
