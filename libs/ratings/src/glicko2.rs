//! Glicko-2, after Mark Glickman, "Example of the Glicko-2 system" (2022).
//!
//! A rating carries a deviation (how uncertain it is) and a volatility (how
//! erratic the player's results are). Between games the deviation grows with
//! the time that passed: after `t` rating periods `φ* = sqrt(φ² + σ²·t)`, never
//! beyond a new player's deviation. The rating service treats every game as a
//! rating period of its own, with `t` the (fractional) number of periods since
//! the player's previous game, as the big sites do; [`rate`] also takes
//! several games at once, which is how Glickman's worked example is checked.
//! The new volatility is found with the Illinois algorithm (step 5 of the
//! paper).

use crate::Score;

/// Converts between the Glicko and the Glicko-2 scale.
pub const SCALE: f64 = 173.7178;

/// The rating every scale is centred on.
const CENTRE: f64 = 1500.0;

/// Tolerance of the volatility iteration.
const EPSILON: f64 = 0.000_001;

/// Upper bound on the volatility iteration; it converges in a handful of
/// steps, the bound only guards against non-finite input.
const MAX_ITERATIONS: u32 = 1000;

/// A Glicko-2 rating on the familiar (Glicko) scale.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Glicko2 {
    /// The rating, `r`.
    pub rating: f64,
    /// The rating deviation, `RD`.
    pub deviation: f64,
    /// The volatility, `σ`.
    pub volatility: f64,
}

/// The system's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// The system constant `τ`: how much the volatility may change; Glickman
    /// suggests 0.3 to 1.2.
    pub tau: f64,
    /// A new player's rating.
    pub initial_rating: f64,
    /// A new player's deviation, also the most a deviation grows to.
    pub initial_deviation: f64,
    /// A new player's volatility.
    pub initial_volatility: f64,
    /// A rating is provisional while its deviation is above this.
    pub provisional_deviation: f64,
    /// Length of one rating period, in seconds.
    pub period_secs: f64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            tau: 0.5,
            initial_rating: 1500.0,
            initial_deviation: 350.0,
            initial_volatility: 0.06,
            provisional_deviation: 110.0,
            period_secs: 86_400.0,
        }
    }
}

/// A setting out of range.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("glicko-2 {0} must be a positive number")]
pub struct ConfigError(&'static str);

impl Config {
    /// Checks that every setting is a positive, finite number (the rating
    /// only needs to be finite).
    pub fn validate(self) -> Result<Self, ConfigError> {
        let positive = |value: f64, name| {
            if value.is_finite() && value > 0.0 {
                Ok(())
            } else {
                Err(ConfigError(name))
            }
        };
        positive(self.tau, "tau")?;
        positive(self.initial_deviation, "initial deviation")?;
        positive(self.initial_volatility, "initial volatility")?;
        positive(self.provisional_deviation, "provisional deviation")?;
        positive(self.period_secs, "rating period")?;
        if !self.initial_rating.is_finite() {
            return Err(ConfigError("initial rating"));
        }
        Ok(self)
    }

    /// A new player's rating.
    pub fn initial(&self) -> Glicko2 {
        Glicko2 {
            rating: self.initial_rating,
            deviation: self.initial_deviation,
            volatility: self.initial_volatility,
        }
    }

    /// Whether a rating with `deviation` is still provisional.
    pub fn is_provisional(&self, deviation: f64) -> bool {
        deviation > self.provisional_deviation
    }
}

/// One game of a rating period: the opponent's rating (as it stood before the
/// game) and the player's score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Game {
    pub opponent: Glicko2,
    pub score: Score,
}

/// `player` after `periods` rating periods without games: the deviation grows
/// to `sqrt(φ² + σ²·t)`, at most `max_deviation`.
pub fn idle(player: Glicko2, periods: f64, max_deviation: f64) -> Glicko2 {
    let phi = player.deviation / SCALE;
    Glicko2 {
        deviation: grown_phi(phi, player.volatility, periods, max_deviation) * SCALE,
        ..player
    }
}

/// `sqrt(φ² + σ²·t)` on the Glicko-2 scale, capped at `max_deviation` (given on
/// the Glicko scale).
fn grown_phi(phi: f64, sigma: f64, periods: f64, max_deviation: f64) -> f64 {
    let periods = if periods.is_finite() {
        periods.max(0.0)
    } else {
        0.0
    };
    (phi * phi + sigma * sigma * periods)
        .sqrt()
        .min(max_deviation / SCALE)
}

/// `player` after a rating period of `periods` length (1 in Glickman's
/// paper) in which they played `games`; with no games only the deviation
/// grows. Opponents enter with their ratings as they stood before.
pub fn rate(player: Glicko2, games: &[Game], periods: f64, config: &Config) -> Glicko2 {
    if games.is_empty() {
        return idle(player, periods, config.initial_deviation);
    }
    // Step 2: to the Glicko-2 scale.
    let mu = (player.rating - CENTRE) / SCALE;
    let phi = player.deviation / SCALE;
    let sigma = player.volatility;

    // Steps 3 and 4: the estimated variance and improvement.
    let mut inverse_v = 0.0;
    let mut improvement = 0.0;
    for game in games {
        let mu_j = (game.opponent.rating - CENTRE) / SCALE;
        let phi_j = game.opponent.deviation / SCALE;
        let g = g(phi_j);
        let e = expected(mu, mu_j, g);
        inverse_v += g * g * e * (1.0 - e);
        improvement += g * (game.score.value() - e);
    }
    let v = 1.0 / inverse_v;
    let delta = v * improvement;

    // Step 5: the new volatility.
    let sigma_new = volatility(phi, sigma, v, delta, config.tau);

    // Steps 6 and 7: the new deviation and rating.
    let phi_star = grown_phi(phi, sigma_new, periods, config.initial_deviation);
    let phi_new = 1.0 / (1.0 / (phi_star * phi_star) + inverse_v).sqrt();
    let mu_new = mu + phi_new * phi_new * improvement;

    // Step 8: back to the Glicko scale.
    let rated = Glicko2 {
        rating: mu_new * SCALE + CENTRE,
        deviation: phi_new * SCALE,
        volatility: sigma_new,
    };
    if rated.rating.is_finite() && rated.deviation.is_finite() && rated.volatility.is_finite() {
        rated
    } else {
        // Only non-finite input gets here; keeping the old rating is the
        // least surprising answer.
        player
    }
}

fn g(phi: f64) -> f64 {
    1.0 / (1.0 + 3.0 * phi * phi / (std::f64::consts::PI * std::f64::consts::PI)).sqrt()
}

fn expected(mu: f64, mu_j: f64, g: f64) -> f64 {
    1.0 / (1.0 + (-g * (mu - mu_j)).exp())
}

/// Step 5: the volatility σ' solving Glickman's `f(x) = 0` by the Illinois
/// algorithm.
fn volatility(phi: f64, sigma: f64, v: f64, delta: f64, tau: f64) -> f64 {
    let a = (sigma * sigma).ln();
    let phi2 = phi * phi;
    let delta2 = delta * delta;
    let f = |x: f64| {
        let ex = x.exp();
        let denominator = phi2 + v + ex;
        ex * (delta2 - phi2 - v - ex) / (2.0 * denominator * denominator) - (x - a) / (tau * tau)
    };

    let mut big_a = a;
    let mut big_b = if delta2 > phi2 + v {
        (delta2 - phi2 - v).ln()
    } else {
        let mut k = 1.0;
        let mut iterations = 0;
        while f(a - k * tau) < 0.0 && iterations < MAX_ITERATIONS {
            k += 1.0;
            iterations += 1;
        }
        a - k * tau
    };
    let mut f_a = f(big_a);
    let mut f_b = f(big_b);
    let mut iterations = 0;
    while (big_b - big_a).abs() > EPSILON && iterations < MAX_ITERATIONS {
        let big_c = big_a + (big_a - big_b) * f_a / (f_b - f_a);
        let f_c = f(big_c);
        if f_c * f_b <= 0.0 {
            big_a = big_b;
            f_a = f_b;
        } else {
            f_a /= 2.0;
        }
        big_b = big_c;
        f_b = f_c;
        iterations += 1;
    }
    (big_a / 2.0).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_deviation_grows_to_the_cap() {
        let player = Glicko2 {
            rating: 1500.0,
            deviation: 50.0,
            volatility: 0.06,
        };
        let one = idle(player, 1.0, 350.0);
        let expected = ((50.0 / SCALE).powi(2) + 0.06f64.powi(2)).sqrt() * SCALE;
        assert!((one.deviation - expected).abs() < 1e-9);
        assert_eq!(one.rating, 1500.0);
        assert_eq!(idle(player, 0.0, 350.0), player);
        assert_eq!(idle(player, 1e9, 350.0).deviation, 350.0);
        assert_eq!(idle(player, f64::NAN, 350.0), player);
    }

    #[test]
    fn defaults_are_valid_and_bad_settings_are_not() {
        assert!(Config::default().validate().is_ok());
        let bad = Config {
            tau: 0.0,
            ..Config::default()
        };
        assert_eq!(bad.validate(), Err(ConfigError("tau")));
        let bad = Config {
            period_secs: f64::NAN,
            ..Config::default()
        };
        assert_eq!(bad.validate(), Err(ConfigError("rating period")));
    }
}
