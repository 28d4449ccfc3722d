//! Every configuration `build()` rejects, and the defaults it accepts.

use std::time::Duration;

use robit::{Backoff, ConfigError, LocalDriver, Mutex, MutexBuilder};

fn builder() -> MutexBuilder {
    Mutex::builder("config", LocalDriver::new())
}

fn rejected(builder: MutexBuilder) -> ConfigError {
    match builder.build() {
        Ok(mutex) => panic!("accepted {mutex:?}"),
        Err(err) => {
            assert!(!err.to_string().is_empty());
            err
        }
    }
}

#[test]
fn the_defaults_build() {
    let mutex = builder().build().unwrap();
    let debug = format!("{mutex:?}");
    assert!(debug.contains("ttl: 30s"), "{debug}");
    assert!(debug.contains("renew_period: 10s"), "{debug}");
}

#[test]
fn an_empty_name_is_rejected() {
    let err = rejected(Mutex::builder("", LocalDriver::new()));
    assert_eq!(err, ConfigError::EmptyName);
    assert_eq!(
        rejected(Mutex::builder(Vec::new(), LocalDriver::new())),
        ConfigError::EmptyName
    );
}

#[test]
fn a_zero_ttl_is_rejected() {
    assert_eq!(
        rejected(builder().ttl(Duration::ZERO)),
        ConfigError::ZeroTtl
    );
}

#[test]
fn a_ttl_longer_than_a_year_is_rejected() {
    let ttl = robit::defaults::MAX_TTL + Duration::from_secs(1);
    assert_eq!(
        rejected(builder().ttl(ttl)),
        ConfigError::TtlTooLong { ttl }
    );
    assert_eq!(
        rejected(builder().ttl(Duration::MAX)),
        ConfigError::TtlTooLong { ttl: Duration::MAX }
    );
    builder().ttl(robit::defaults::MAX_TTL).build().unwrap();
}

#[test]
fn the_longest_ttl_is_a_year_of_365_days() {
    let day = Duration::from_secs(24 * 3600);
    assert_eq!(robit::defaults::MAX_TTL, day * 365);
}

#[test]
fn a_drift_factor_outside_zero_to_one_half_is_rejected() {
    for drift_factor in [-0.01, 0.5, 0.9, f64::INFINITY] {
        assert_eq!(
            rejected(builder().drift_factor(drift_factor)),
            ConfigError::DriftOutOfRange { drift_factor }
        );
    }
    assert!(matches!(
        rejected(builder().drift_factor(f64::NAN)),
        ConfigError::DriftOutOfRange { drift_factor } if drift_factor.is_nan()
    ));
    builder().drift_factor(0.0).build().unwrap();
    builder()
        .drift_factor(0.49)
        .renew_period(Duration::from_secs(6))
        .renew_timeout(Duration::from_secs(6))
        .build()
        .unwrap();
}

#[test]
fn a_margin_that_eats_the_whole_ttl_is_rejected() {
    let ttl = Duration::from_millis(100);
    let safety_margin = Duration::from_millis(99);
    assert_eq!(
        rejected(builder().ttl(ttl).safety_margin(safety_margin)),
        ConfigError::NoValidity { ttl, safety_margin }
    );
}

#[test]
fn a_zero_renew_period_or_timeout_is_rejected() {
    assert_eq!(
        rejected(builder().renew_period(Duration::ZERO)),
        ConfigError::ZeroRenewPeriod
    );
    assert_eq!(
        rejected(builder().renew_timeout(Duration::ZERO)),
        ConfigError::ZeroRenewTimeout
    );
}

#[test]
fn a_renew_period_and_timeout_that_leave_no_room_to_retry_are_rejected() {
    let ttl = Duration::from_secs(30);
    // Validity: 30 s × 0.99 − 2 ms = 29.698 s; period + 1.5 × timeout must fit in it.
    let validity = Duration::from_millis(29_698);
    for (renew_period, renew_timeout) in [
        (Duration::from_secs(20), Duration::from_secs(10)),
        (Duration::from_secs(20), Duration::from_millis(6_466)),
        (Duration::from_secs(29), Duration::from_secs(1)),
        (Duration::from_secs(1), Duration::from_secs(20)),
        (Duration::from_secs(40), Duration::from_secs(1)),
    ] {
        let err = rejected(
            builder()
                .ttl(ttl)
                .renew_period(renew_period)
                .renew_timeout(renew_timeout),
        );
        assert_eq!(
            err,
            ConfigError::NoRoomToRetry {
                renew_period,
                renew_timeout,
                validity
            },
            "period {renew_period:?}, timeout {renew_timeout:?}"
        );
    }
    // Just inside the bound: 20 s + 1.5 × 6.465 s = 29.6975 s.
    builder()
        .ttl(ttl)
        .renew_period(Duration::from_secs(20))
        .renew_timeout(Duration::from_millis(6_465))
        .build()
        .unwrap();
    // On the bound: 20.698 s + 1.5 × 6 s = 29.698 s, a retry of exactly half an attempt.
    builder()
        .ttl(ttl)
        .renew_period(Duration::from_millis(20_698))
        .renew_timeout(Duration::from_secs(6))
        .build()
        .unwrap();
}

#[test]
fn a_safety_margin_below_timer_granularity_is_rejected() {
    for safety_margin in [Duration::ZERO, Duration::from_micros(999)] {
        assert_eq!(
            rejected(builder().safety_margin(safety_margin)),
            ConfigError::MarginTooSmall { safety_margin }
        );
    }
    builder()
        .safety_margin(robit::defaults::MIN_SAFETY_MARGIN)
        .build()
        .unwrap();
}

#[test]
fn a_default_renew_period_that_a_large_drift_leaves_no_room_for_is_rejected() {
    // TTL/3 + TTL/3 = 0.67 TTL, but a drift factor of 0.4 leaves 0.6 TTL of validity.
    assert!(matches!(
        rejected(builder().drift_factor(0.4)),
        ConfigError::NoRoomToRetry { .. }
    ));
}

#[test]
fn an_invalid_backoff_is_rejected() {
    let base = Duration::from_millis(100);
    let max = Duration::from_millis(10);
    assert_eq!(
        rejected(builder().backoff(Backoff::new(base, max))),
        ConfigError::InvalidBackoff { base, max }
    );
    assert_eq!(
        rejected(builder().backoff(Backoff::new(Duration::ZERO, max))),
        ConfigError::InvalidBackoff {
            base: Duration::ZERO,
            max
        }
    );
    // A backoff that never grows is fine, and so is a cap of the longest TTL.
    builder().backoff(Backoff::new(max, max)).build().unwrap();
    builder()
        .backoff(Backoff::new(base, robit::defaults::MAX_TTL))
        .build()
        .unwrap();
    // A cap too long to add to a clock reading is refused, not a later panic.
    let huge = Duration::MAX;
    assert_eq!(
        rejected(builder().backoff(Backoff::new(huge, huge))),
        ConfigError::InvalidBackoff {
            base: huge,
            max: huge
        }
    );
}

#[test]
fn rejections_say_what_to_do() {
    let err = rejected(builder().drift_factor(0.7));
    assert!(err.to_string().contains("[0, 0.5)"), "{err}");
    let err = rejected(builder().renew_period(Duration::from_secs(25)));
    assert!(
        err.to_string()
            .contains("shorten the period or the timeout"),
        "{err}"
    );
}
