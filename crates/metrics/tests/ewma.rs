//! The moving averages against DropWizard's own `EWMATest`: an average marked 3 and ticked
//! once reads 0.6 events/s, then decays minute by minute (12 empty ticks each) through exactly
//! the figures DropWizard's test expects, to its tolerance of 1e-6.

use ferrowizard_metrics::Ewma;

fn elapse_minute(ewma: &mut Ewma) {
    for _ in 0..12 {
        ewma.tick();
    }
}

fn assert_decays(mut ewma: Ewma, expected_per_minute: &[f64]) {
    ewma.update(3);
    ewma.tick();
    assert!((ewma.rate_per_second() - 0.6).abs() < 1e-6);
    for (minute, expected) in expected_per_minute.iter().enumerate() {
        elapse_minute(&mut ewma);
        let rate = ewma.rate_per_second();
        assert!(
            (rate - expected).abs() < 1e-6,
            "after {} minute(s): {rate} != {expected}",
            minute + 1
        );
    }
}

#[test]
fn one_minute_ewma_with_a_value_of_three() {
    assert_decays(
        Ewma::one_minute(),
        &[
            0.22072766, 0.08120117, 0.02987224, 0.01098938, 0.00404277, 0.00148725, 0.00054713,
            0.00020128, 0.00007405, 0.00002724, 0.00001002, 0.00000369, 0.00000136, 0.00000050,
            0.00000018,
        ],
    );
}

#[test]
fn five_minute_ewma_with_a_value_of_three() {
    assert_decays(
        Ewma::five_minutes(),
        &[
            0.49123845, 0.40219203, 0.32928698, 0.26959738, 0.22072766, 0.18071653, 0.14795818,
            0.12113791, 0.09917933, 0.08120117, 0.06648190, 0.05443077, 0.04456415, 0.03648604,
            0.02987224,
        ],
    );
}

#[test]
fn fifteen_minute_ewma_with_a_value_of_three() {
    assert_decays(
        Ewma::fifteen_minutes(),
        &[
            0.56130419, 0.52510399, 0.49123845, 0.45955700, 0.42991879, 0.40219203, 0.37625345,
            0.35198773, 0.32928698, 0.30805027, 0.28818318, 0.26959738, 0.25221023, 0.23594443,
            0.22072766,
        ],
    );
}

#[test]
fn hourly_ewma_over_sixty_minutes() {
    // DropWizard's `hourlyMinuteEWMA` figures, from the same constructor with minutes = 60.
    assert_decays(
        Ewma::over_minutes(60.0),
        &[0.59008287, 0.58032966, 0.57073765, 0.56130419, 0.55202664],
    );
}
