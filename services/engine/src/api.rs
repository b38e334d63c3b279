//! `chess.engine.v1.EngineService`: wire types in, domain types to the pool,
//! wire types out.

use std::pin::Pin;

use chess_domain::GameId;
use chess_proto::engine::v1::{self as pb, engine_service_server::EngineService};
use chess_runtime::Reason;
use chess_uci::{Info, Score};
use futures::Stream;
use tonic::{Code, Request, Response, Status};
use tracing::instrument;

use crate::{
    Error,
    limits::{self, Level, Limits, SearchPlan},
    metrics::RequestRecord,
    pool::{AnalyseEvent, Pool, SearchOutcome, SearchRequest},
    position::GamePosition,
};

/// The gRPC service over a [`Pool`].
#[derive(Clone, Debug)]
pub struct EngineApi {
    pool: Pool,
}

impl EngineApi {
    pub fn new(pool: Pool) -> Self {
        Self { pool }
    }
}

type AnalyseStream = Pin<Box<dyn Stream<Item = Result<pb::AnalyseResponse, Status>> + Send>>;

#[tonic::async_trait]
impl EngineService for EngineApi {
    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn best_move(
        &self,
        request: Request<pb::BestMoveRequest>,
    ) -> Result<Response<pb::BestMoveResponse>, Status> {
        let mut record = self.pool.metrics().request("BestMove");
        let result = async {
            let request = SearchRequest::try_from(request.into_inner())?;
            let found = self.pool.best_move(request).await?;
            Ok(pb::BestMoveResponse {
                result: Some(found.into()),
            })
        }
        .await;
        answer(&mut record, result)
    }

    type AnalyseStream = AnalyseStream;

    #[instrument(level = "debug", skip_all, fields(game_id = %request.get_ref().game_id))]
    async fn analyse(
        &self,
        request: Request<pb::AnalyseRequest>,
    ) -> Result<Response<Self::AnalyseStream>, Status> {
        let mut record = self.pool.metrics().request("Analyse");
        let started = SearchRequest::try_from(request.into_inner())
            .and_then(|request| self.pool.analyse(request));
        let receiver = match started {
            Ok(receiver) => receiver,
            Err(e) => return Err(refuse(&mut record, e)),
        };
        // The stream ends after the outcome or an error; dropped before that
        // (the caller went away), it drops the receiver, which stops the
        // search, and the record counts the request as cancelled.
        let stream = futures::stream::unfold(
            (receiver, Some(record)),
            |(mut receiver, record)| async move {
                let mut record = record?;
                let item = match receiver.recv().await {
                    Some(Ok(AnalyseEvent::Info(info))) => {
                        let update = pb::analyse_response::Update::Info(info_to_pb(&info));
                        return Some((
                            Ok(pb::AnalyseResponse {
                                update: Some(update),
                            }),
                            (receiver, Some(record)),
                        ));
                    }
                    Some(Ok(AnalyseEvent::Done(found))) => {
                        record.finish(tonic::Code::Ok);
                        Ok(pb::AnalyseResponse {
                            update: Some(pb::analyse_response::Update::Result(found.into())),
                        })
                    }
                    Some(Err(e)) => Err(refuse(&mut record, e)),
                    None => Err(refuse(&mut record, Error::ShuttingDown)),
                };
                Some((item, (receiver, None)))
            },
        );
        Ok(Response::new(Box::pin(stream)))
    }

    #[instrument(level = "debug", skip_all)]
    async fn list_moves(
        &self,
        request: Request<pb::ListMovesRequest>,
    ) -> Result<Response<pb::ListMovesResponse>, Status> {
        let mut record = self.pool.metrics().request("ListMoves");
        let result = async {
            let position =
                GamePosition::try_from(request.into_inner().position.unwrap_or_default())?;
            let moves = self.pool.list_moves(position).await?;
            Ok(pb::ListMovesResponse {
                moves: moves.iter().map(ToString::to_string).collect(),
            })
        }
        .await;
        answer(&mut record, result)
    }
}

/// The gRPC answer for `result`, counted in `record`.
fn answer<T>(record: &mut RequestRecord, result: Result<T, Error>) -> Result<Response<T>, Status> {
    match result {
        Ok(message) => {
            record.finish(tonic::Code::Ok);
            Ok(Response::new(message))
        }
        Err(e) => {
            if matches!(e, Error::EngineFailed(_)) {
                tracing::warn!(error = %e, "request failed");
            }
            Err(refuse(record, e))
        }
    }
}

/// The status refusing a request for `error`, counted in `record`.
fn refuse(record: &mut RequestRecord, error: Error) -> Status {
    let status = Status::from(error);
    record.finish(status.code());
    status
}

impl TryFrom<pb::Position> for GamePosition {
    type Error = Error;

    fn try_from(position: pb::Position) -> Result<Self, Error> {
        GamePosition::new(&position.fen, &position.moves)
    }
}

impl TryFrom<pb::BestMoveRequest> for SearchRequest {
    type Error = Error;

    fn try_from(request: pb::BestMoveRequest) -> Result<Self, Error> {
        use pb::best_move_request::Strength;
        let plan = match request.strength {
            Some(Strength::Limits(limits)) => {
                SearchPlan::full_strength(Limits::new(limits.movetime_ms, limits.depth)?, 1)
            }
            Some(Strength::Level(level)) => Level::new(level)?.plan(),
            None => return Err(Error::MissingLimits),
        };
        Ok(Self {
            position: request.position.unwrap_or_default().try_into()?,
            plan,
            game_id: game_id(&request.game_id),
        })
    }
}

impl TryFrom<pb::AnalyseRequest> for SearchRequest {
    type Error = Error;

    fn try_from(request: pb::AnalyseRequest) -> Result<Self, Error> {
        let limits = request.limits.unwrap_or_default();
        let limits = Limits::new(limits.movetime_ms, limits.depth)?;
        let multipv = limits::multipv(request.multipv)?;
        Ok(Self {
            position: request.position.unwrap_or_default().try_into()?,
            plan: SearchPlan::full_strength(limits, multipv),
            game_id: game_id(&request.game_id),
        })
    }
}

/// The game a request names. None when it names none, and when the id could
/// not be a game's (too long): such a search shares no game's hash.
fn game_id(id: &str) -> Option<GameId> {
    GameId::parse(id).ok()
}

fn score_to_pb(score: Score) -> pb::Score {
    pb::Score {
        value: Some(match score {
            Score::Cp(cp) => pb::score::Value::Centipawns(cp),
            Score::Mate(moves) => pb::score::Value::MateIn(moves),
        }),
    }
}

fn saturating_u32(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl From<SearchOutcome> for pb::SearchResult {
    fn from(found: SearchOutcome) -> Self {
        Self {
            best_move: found.best_move.to_string(),
            ponder: found.ponder.map(|m| m.to_string()).unwrap_or_default(),
            score: found.score.map(score_to_pb),
            depth: found.depth,
            nodes: found.nodes,
            engine_time_ms: saturating_u32(
                u64::try_from(found.engine_time.as_millis()).unwrap_or(u64::MAX),
            ),
            pv: found.pv.iter().map(ToString::to_string).collect(),
        }
    }
}

fn info_to_pb(info: &Info) -> pb::AnalysisInfo {
    pb::AnalysisInfo {
        depth: info.depth.unwrap_or(0),
        seldepth: info.seldepth.unwrap_or(0),
        multipv: info.multipv.unwrap_or(1),
        score: info.score.map(score_to_pb),
        pv: info.pv.iter().map(ToString::to_string).collect(),
        nodes: info.nodes.unwrap_or(0),
        nps: info.nps.unwrap_or(0),
        time_ms: saturating_u32(info.time_ms.unwrap_or(0)),
    }
}

impl From<Error> for Status {
    fn from(error: Error) -> Self {
        let message = error.to_string();
        let (code, reason) = match error {
            Error::MalformedMove { .. } => (Code::InvalidArgument, Reason::MalformedMove),
            Error::IllegalMove { .. } => (Code::InvalidArgument, Reason::IllegalMove),
            Error::InvalidFen(_)
            | Error::TooManyMoves(_)
            | Error::MissingLimits
            | Error::MovetimeTooLong(_)
            | Error::DepthTooDeep(_)
            | Error::InvalidLevel(_)
            | Error::InvalidMultipv(_) => (Code::InvalidArgument, Reason::InvalidRequest),
            Error::NoLegalMoves => (Code::FailedPrecondition, Reason::GameOver),
            Error::QueueFull(_) => (Code::ResourceExhausted, Reason::EngineUnavailable),
            Error::NoEngine | Error::EngineFailed(_) | Error::ShuttingDown => {
                (Code::Unavailable, Reason::EngineUnavailable)
            }
        };
        reason.status(code, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_and_faults_map_to_their_codes() {
        let cases = [
            (Error::InvalidFen("x".into()), Code::InvalidArgument),
            (
                Error::IllegalMove {
                    index: 0,
                    text: "e2e5".into(),
                },
                Code::InvalidArgument,
            ),
            (Error::MissingLimits, Code::InvalidArgument),
            (Error::InvalidLevel(9), Code::InvalidArgument),
            (Error::NoLegalMoves, Code::FailedPrecondition),
            (Error::QueueFull(3), Code::ResourceExhausted),
            (Error::NoEngine, Code::Unavailable),
            (Error::EngineFailed("gone".into()), Code::Unavailable),
        ];
        for (error, code) in cases {
            let status = Status::from(error);
            assert_eq!(status.code(), code, "{status:?}");
            assert!(Reason::of(&status).is_some());
        }
        let status = Status::from(Error::IllegalMove {
            index: 2,
            text: "e2e5".into(),
        });
        assert_eq!(Reason::of(&status), Some(Reason::IllegalMove));
    }

    fn position(fen: &str, moves: &[&str]) -> Option<pb::Position> {
        Some(pb::Position {
            fen: fen.into(),
            moves: moves.iter().map(|m| (*m).to_owned()).collect(),
        })
    }

    #[test]
    fn best_move_requests_need_limits_or_a_level() {
        use pb::best_move_request::Strength;
        let request = |strength| pb::BestMoveRequest {
            position: position("", &["e2e4"]),
            strength,
            game_id: String::new(),
        };
        assert!(matches!(
            SearchRequest::try_from(request(None)),
            Err(Error::MissingLimits)
        ));
        assert!(matches!(
            SearchRequest::try_from(request(Some(Strength::Limits(pb::SearchLimits::default())))),
            Err(Error::MissingLimits)
        ));
        assert!(matches!(
            SearchRequest::try_from(request(Some(Strength::Level(0)))),
            Err(Error::InvalidLevel(0))
        ));
        let ok = SearchRequest::try_from(request(Some(Strength::Limits(pb::SearchLimits {
            movetime_ms: 500,
            depth: 15,
        }))))
        .unwrap();
        assert_eq!(ok.plan.go.to_string(), "go depth 15 movetime 500");
        assert_eq!(ok.game_id, None);
        assert_eq!(ok.position.moves().len(), 1);
    }

    #[test]
    fn analyse_requests_check_multipv_and_position() {
        let request = |multipv, moves: &[&str]| pb::AnalyseRequest {
            position: position("", moves),
            limits: Some(pb::SearchLimits {
                movetime_ms: 0,
                depth: 10,
            }),
            multipv,
            game_id: "g1".into(),
        };
        let ok = SearchRequest::try_from(request(0, &[])).unwrap();
        assert_eq!(ok.plan.strength.multipv, 1);
        assert_eq!(ok.game_id, Some(GameId::trusted("g1")));
        assert!(matches!(
            SearchRequest::try_from(request(6, &[])),
            Err(Error::InvalidMultipv(6))
        ));
        assert!(matches!(
            SearchRequest::try_from(request(1, &["e2e5"])),
            Err(Error::IllegalMove { index: 0, .. })
        ));
    }

    #[test]
    fn scores_and_infos_convert() {
        assert_eq!(
            score_to_pb(Score::Mate(-3)).value,
            Some(pb::score::Value::MateIn(-3))
        );
        let info = match chess_uci::Line::parse(
            "info depth 7 seldepth 9 multipv 2 score cp 15 nodes 900 nps 90000 time 10 pv e2e4 e7e5",
        )
        .unwrap()
        {
            chess_uci::Line::Info(info) => info,
            other => panic!("{other:?}"),
        };
        let message = info_to_pb(&info);
        assert_eq!(
            (
                message.depth,
                message.seldepth,
                message.multipv,
                message.nodes,
                message.nps,
                message.time_ms
            ),
            (7, 9, 2, 900, 90_000, 10)
        );
        assert_eq!(message.pv, ["e2e4", "e7e5"]);
        assert_eq!(
            message.score.unwrap().value,
            Some(pb::score::Value::Centipawns(15))
        );
    }
}
