//! The SVG timeline, on a small hand-made history.

use std::time::Duration;

use super::layout::{Layout, pack, tick_step};
use super::{FAULT_ROW, LANE, LEFT, RIGHT, WIDTH, escape};
use crate::{EventKind, History, Promise, Timeline, Violation};

fn history() -> History {
    let history = History::new();
    let ms = Duration::from_millis;
    history.record_at(ms(0), "c1", EventKind::LockCalled);
    history.record_at(
        ms(100),
        "c1",
        EventKind::Acquired {
            lease: 1,
            token: 41,
        },
    );
    history.record_at(ms(200), "c2", EventKind::LockCalled);
    history.record_at(
        ms(1000),
        "world",
        EventKind::Fault {
            what: "partition c1 | backend <&>".into(),
            ended: false,
        },
    );
    history.record_at(
        ms(2500),
        "c1",
        EventKind::Lost {
            lease: 1,
            reason: "expired".into(),
        },
    );
    history.record_at(
        ms(2600),
        "c2",
        EventKind::Acquired {
            lease: 1,
            token: 42,
        },
    );
    history.record_at(
        ms(3000),
        "world",
        EventKind::Fault {
            what: "partition c1 | backend <&>".into(),
            ended: true,
        },
    );
    history.record_at(ms(3500), "c1", EventKind::Crashed);
    history.record_at(ms(4500), "c1", EventKind::Restarted);
    history.record_at(
        ms(5000),
        "storage",
        EventKind::WriteRejected {
            from: "c1".into(),
            token: 41,
            highest: 42,
        },
    );
    // A thousand writes within one millisecond land on one pixel.
    for n in 0..1000 {
        history.record_at(
            ms(6000) + Duration::from_nanos(n),
            "storage",
            EventKind::WriteAccepted {
                from: "c2".into(),
                token: 42,
            },
        );
    }
    history
}

fn violation() -> Violation {
    Violation {
        promise: Promise::Fencing,
        clients: vec!["c1".into(), "c2".into()],
        instants: vec![Duration::from_secs(5)],
        message: "a stale write was accepted".into(),
    }
}

fn svg() -> String {
    Timeline::new(&history(), &[violation()], Duration::from_secs(10))
        .with_title("two <clients>")
        .svg()
}

#[test]
fn each_client_gets_one_lane_with_its_label() {
    let svg = svg();
    assert!(svg.starts_with("<svg "));
    assert!(svg.ends_with("</svg>\n"));
    assert_eq!(svg.matches("<g class=\"lane\"").count(), 2);
    assert!(svg.contains("data-client=\"c1\""));
    assert!(svg.contains(">c2</text>"));
}

#[test]
fn held_intervals_are_bars_labelled_with_their_token() {
    let svg = svg();
    assert_eq!(svg.matches("height=\"14\" fill=\"#3b6fc4\"").count(), 2);
    // Labelled by their place in the run; the token itself is in the tooltip.
    assert!(svg.contains(">#1</text>"));
    assert!(svg.contains("<title>#1: c1 lease 1, token 41:"));
    assert!(svg.contains("c1 lease 1, token 41: 0.100s to 2.500s (lost)"));
    assert!(svg.contains("c2 lease 1, token 42: 2.600s to 10.000s (still held at the end)"));
}

#[test]
fn losses_crashes_restarts_and_writes_have_their_own_marks() {
    let svg = svg();
    assert!(svg.contains("<g><title>2.500s lost lease 1: expired</title><path"));
    assert!(svg.contains("<title>3.500s CRASHED</title>"));
    assert!(svg.contains("<title>4.500s restarted</title>"));
    assert_eq!(svg.matches("REJECTED as stale").count(), 1);
    // The thousand accepted writes on one pixel are drawn once.
    assert_eq!(svg.matches("write from c2 accepted").count(), 1);
}

#[test]
fn fault_windows_are_bands_with_their_escaped_description() {
    let svg = svg();
    assert!(svg.contains(">partition c1 | backend &lt;&amp;&gt;</text>"));
    assert!(svg.contains("<title>partition c1 | backend &lt;&amp;&gt;: 1.000s to 3.000s</title>"));
    assert!(svg.contains("<title>two &lt;clients&gt;</title>"));
    assert!(!svg.contains("<&>") && !svg.contains("<clients>"));
}

#[test]
fn violations_are_red_markers_at_their_instants_and_listed() {
    let svg = svg();
    // One marker per client involved, a line across the lanes, a number.
    assert_eq!(
        svg.matches("<circle cx=\"").count(),
        2 + 1,
        "and one in the legend"
    );
    assert!(svg.contains(">1. P4 (fencing) at 5.000s [c1, c2]: a stale write was accepted</text>"));
}

#[test]
fn the_axis_has_round_tick_labels_in_seconds() {
    let svg = svg();
    for label in ["0s", "1s", "5s", "10s"] {
        assert!(svg.contains(&format!(">{label}</text>")), "{label}");
    }
    assert_eq!(tick_step(Duration::from_secs(60)), 5.0);
    assert_eq!(tick_step(Duration::from_millis(300)), 0.05);
}

#[test]
fn the_legend_names_every_mark() {
    let svg = svg();
    for name in [
        "held (#n: nth grant)",
        "granted, as the backend saw it",
        "lock() failed",
        "loss signalled",
        "crash",
        "restart",
        "write accepted",
        "stale write accepted",
        "write rejected",
        "fault window",
        "violation",
    ] {
        assert!(svg.contains(&format!(">{name}</text>")), "{name}");
    }
}

#[test]
fn fault_labels_that_would_overlap_go_on_separate_rows() {
    assert_eq!(
        pack(&[(0.0, 50.0), (10.0, 60.0), (55.0, 90.0), (61.0, 70.0)], 8),
        [0, 1, 0, 1]
    );
    assert_eq!(
        pack(&[(0.0, 50.0), (10.0, 60.0), (20.0, 70.0)], 2),
        [0, 1, 1]
    );
}

#[test]
fn text_is_escaped() {
    assert_eq!(
        escape("a<b & \"c\" 'd'>"),
        "a&lt;b &amp; &quot;c&quot; &apos;d&apos;&gt;"
    );
}

#[test]
fn a_failed_lock_call_is_marked_on_its_lane_with_the_error() {
    let history = History::new();
    let ms = Duration::from_millis;
    history.record_at(ms(0), "c1", EventKind::LockCalled);
    let error = "timed out after 1s waiting for the lock".to_owned();
    history.record_at(ms(1000), "c1", EventKind::LockFailed { error });
    history.record_at(ms(1000), "c1", EventKind::LockCalled);
    let svg = Timeline::new(&history, &[], Duration::from_secs(2)).svg();
    assert_eq!(
        svg.matches(
            "<title>1.000s lock() failed: timed out after 1s waiting for the lock</title></path>"
        )
        .count(),
        1,
        "{svg}"
    );
}

#[test]
fn the_legend_wraps_rather_than_run_off_the_drawing() {
    let svg = svg();
    let widest = svg
        .split("<g transform=\"translate(")
        .skip(1)
        .filter_map(|rest| rest.split(' ').next()?.parse::<f64>().ok())
        .fold(0.0, f64::max);
    assert!(widest < 1200.0 - 100.0, "a legend item starts at {widest}");
}

#[test]
fn an_accepted_write_with_a_token_older_than_a_later_grant_is_marked_stale() {
    let history = History::new();
    let ms = Duration::from_millis;
    let write = |token| EventKind::WriteAccepted {
        from: "c1".into(),
        token,
    };
    history.record_at(ms(0), "c1", EventKind::Acquired { lease: 1, token: 5 });
    history.record_at(ms(100), "storage", write(5));
    history.record_at(ms(200), "c2", EventKind::Acquired { lease: 1, token: 6 });
    history.record_at(ms(300), "storage", write(5));
    let svg = Timeline::new(&history, &[], Duration::from_secs(1)).svg();
    assert_eq!(
        svg.matches("<title>STALE: 0.300s write from c1 accepted")
            .count(),
        1,
        "{svg}"
    );
    assert_eq!(
        svg.matches("STALE: ").count(),
        1,
        "only the late write: {svg}"
    );
}

#[test]
fn the_backends_grants_have_a_lane_of_their_own_ended_as_the_backend_ended_them() {
    let history = History::new();
    let s = Duration::from_secs;
    let granted = |to: &str, token, until| EventKind::BackendGranted {
        to: to.into(),
        token,
        until: s(until),
    };
    history.record_at(s(1), "backend", granted("c1", 7, 5));
    let renewed = EventKind::BackendRenewed {
        by: "c1".into(),
        token: 7,
        until: s(6),
    };
    history.record_at(s(2), "backend", renewed);
    history.record_at(s(3), "backend", EventKind::BackendStateLost);
    history.record_at(s(4), "backend", granted("c2", 8, 9));
    let released = EventKind::BackendReleased {
        by: "c2".into(),
        token: 8,
    };
    history.record_at(s(5), "backend", released);
    history.record_at(s(6), "backend", granted("c1", 9, 7));
    let svg = Timeline::new(&history, &[], s(10)).svg();
    assert!(
        svg.contains("<g class=\"backend-lane\" data-host=\"backend\">"),
        "{svg}"
    );
    assert_eq!(
        svg.matches("<g class=\"lane\"").count(),
        0,
        "no client has a lane"
    );
    for title in [
        "backend: granted to c1, token 7 (#1 c1): 1.000s to 3.000s (lost with the backend's state)",
        "backend: granted to c2, token 8 (#2 c2): 4.000s to 5.000s (released)",
        "backend: granted to c1, token 9 (#3 c1): 6.000s to 7.000s (expired)",
    ] {
        assert!(svg.contains(title), "{title}: {svg}");
    }
    // Without grants from the backend, it has no lane.
    assert!(!self::svg().contains(">backend</text>"));
}

#[test]
fn a_quarantine_is_a_band_on_the_backends_lane_cut_short_by_another_loss_of_state() {
    let history = History::new();
    let s = Duration::from_secs;
    let quarantined = |until| EventKind::BackendQuarantined {
        by: "c2".into(),
        until: s(until),
    };
    history.record_at(s(2), "backend", quarantined(6));
    history.record_at(s(7), "backend", quarantined(9));
    history.record_at(s(8), "backend", EventKind::BackendStateLost);
    let svg = Timeline::new(&history, &[], s(10)).svg();
    assert!(svg.contains(">backend</text>"), "{svg}");
    assert_eq!(
        svg.matches("<rect class=\"quarantine\"").count(),
        2,
        "{svg}"
    );
    for title in [
        "backend: quarantine, no grants from 2.000s to 6.000s (state found lost by c2)",
        "backend: quarantine, no grants from 7.000s to 8.000s (state found lost by c2)",
    ] {
        assert!(svg.contains(title), "{title}: {svg}");
    }
    assert!(svg.contains(">quarantine</text>"), "the legend names it");
}

#[test]
fn the_layout_stacks_the_title_fault_rows_lanes_legend_and_list_from_the_top() {
    let timeline = Timeline::new(&history(), &[violation()], Duration::from_secs(10))
        .with_title("two <clients>");
    let layout = Layout::of(&timeline);
    // Under the title, one row of fault labels, then the violations' numbers.
    assert_eq!(layout.faults_top, 30.0);
    assert_eq!(layout.faults.len(), 1);
    assert_eq!(layout.marks_top, 30.0 + FAULT_ROW);
    // Two clients' lanes (the backend made no grants here), then the legend, then one
    // violation listed.
    assert_eq!(layout.lanes.names, ["c1", "c2"]);
    assert_eq!(layout.lanes.top, layout.marks_top + 16.0);
    assert_eq!(layout.lanes_bottom, layout.lanes.top + 2.0 * LANE);
    assert_eq!(layout.legend_top, layout.lanes_bottom + 30.0);
    assert_eq!(layout.listed, 1);
    assert!(layout.list_top > layout.legend_top);
    assert_eq!(layout.height, layout.list_top - 6.0 + 2.0 * 15.0 + 8.0);
    // The axis runs from the start to the end of the run across the plot.
    assert_eq!(layout.axis.x(Duration::ZERO), LEFT);
    assert_eq!(layout.axis.x(Duration::from_secs(10)), WIDTH - RIGHT);
    assert_eq!(
        layout.axis.x(Duration::from_secs(5)),
        LEFT + layout.axis.plot / 2.0
    );
}
